# karta-paced-load: scripts/load-test.sh's constant-rate client (one schedule to the nanosecond over all
# connections; wrk paces by whole milliseconds). Needs OpenSSL and CLI11, not Google Benchmark, so the
# top CMakeLists.txt includes this with the tests too: tests/e2e-paced-load.cpp runs it.
add_executable(karta-paced-load ${CMAKE_CURRENT_LIST_DIR}/paced_load.cpp)
target_link_libraries(karta-paced-load PRIVATE OpenSSL::SSL OpenSSL::Crypto CLI11::CLI11)
target_compile_options(karta-paced-load PRIVATE -Wall -Wextra -Wpedantic)

// spdlog's compiled part, built into this binary from the headers of Debian's libspdlog-dev instead of
// linked as libspdlog.so: spdlog's own "compiled library" mode (SPDLOG_COMPILED_LIB, as its src/*.cpp
// build it), for the parts this project uses. Every other file includes spdlog's headers as usual and sees
// only declarations; the definitions are here, once, and the linker keeps only what is called
// (-Wl,--gc-sections). libspdlog.so was 516 KiB of the idle webhook's resident pages, nearly all of its
// 534 KB; compiled in, the idle resident size is about 220 KiB smaller (the median of five starts taken
// in turn with the shared library; bench/README.md, "Memory, second round").
// fmt stays the shared libfmt, as spdlog's Debian build uses it (SPDLOG_FMT_EXTERNAL).

#ifndef SPDLOG_COMPILED_LIB
#error "compile with SPDLOG_COMPILED_LIB (CMakeLists.txt, target karta_spdlog)"
#endif

#include <mutex>

#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/sinks/ansicolor_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/stdout_sinks-inl.h>
#include <spdlog/spdlog-inl.h>

// The templates other files use without their definitions: a logger made from a list of sinks, the
// sinks' base with and without a mutex (ostream_sink, null_sink and the tests' sinks derive from it), the
// plain stdout and stderr sinks and the stderr logger (runtime/logging.cpp), and the colour sink of
// spdlog's default logger.
template spdlog::logger::logger(std::string name, sinks_init_list::iterator begin, sinks_init_list::iterator end);
template class spdlog::sinks::base_sink<std::mutex>;
template class spdlog::sinks::base_sink<spdlog::details::null_mutex>;
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_mutex>;
template class spdlog::sinks::stdout_sink_base<spdlog::details::console_nullmutex>;
template class spdlog::sinks::stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::stdout_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::stderr_sink<spdlog::details::console_nullmutex>;
template class spdlog::sinks::ansicolor_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stdout_sink<spdlog::details::console_mutex>;
template class spdlog::sinks::ansicolor_stderr_sink<spdlog::details::console_mutex>;
template std::shared_ptr<spdlog::logger> spdlog::stderr_logger_mt<spdlog::synchronous_factory>(const std::string& name);

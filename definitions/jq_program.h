#pragma once

// libjq 1.6 behind a C++ interface. jq.h stays inside jq_program.cpp: it has no extern "C" guards and
// its values (jv) are reference-counted without atomics, so nothing of it may leak into other modules.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/json_document.h"

namespace karta {

class JqCompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A JSON value converted once into jq's representation, shared by every program run on it. Belongs to
// one thread at a time.
class JqInput {
 public:
  explicit JqInput(const json& value);
  // Objects' members go to jq in key order either way, so both give jq the same input.
  explicit JqInput(JsonElement value);
  ~JqInput();
  JqInput(const JqInput&) = delete;
  JqInput& operator=(const JqInput&) = delete;

  struct Value;
  const Value& value() const { return *value_; }

 private:
  std::unique_ptr<Value> value_;
};

struct JqOutcome {
  std::vector<json> outputs;        // in order, up to the cap
  std::optional<std::string> error;  // the error that ended evaluation, if any
  bool capped = false;               // more outputs than the cap: the rest was not computed
};

// When a program's states are compiled. Now: in the constructor, which throws JqCompileError when the
// text does not compile (how a definition from a file or the cluster is checked as it loads). OnFirstUse:
// for a text known to compile (the built-in catalog, whose every program a test compiles), none in the
// constructor; `prepare()` compiles them off the admission threads, and a run that finds none compiled
// and none compiling compiles one itself. A process that never runs a program (serve never runs the
// status and pod groups) never pays for it: libjq 1.6 spends 20-50 ms and 170 million instructions per
// compile binding its builtin library, whatever the program.
enum class JqCompilation { Now, OnFirstUse };

// A compiled jq program. Compiling costs 20-50 ms with libjq 1.6 (it recompiles jq's builtins each time),
// running ~20 us, so programs are compiled when definitions load (or, OnFirstUse, in the background) and
// never per request. A jq_state is not thread-safe: the program keeps up to `copies` states (one per CPU
// that may run it at once), starting with one and adding one through prepare() when runs had to wait; a
// caller finding all of them in use waits for one, at most `wait_limit`, and then gets an error outcome.
class JqProgram {
 public:
  // Compiles `text` once (JqCompilation::Now). Throws JqCompileError with jq's own messages.
  JqProgram(const std::string& text, std::size_t copies,
            std::chrono::milliseconds wait_limit = std::chrono::milliseconds(5'000),
            JqCompilation when = JqCompilation::Now);
  ~JqProgram();
  JqProgram(JqProgram&&) noexcept;
  JqProgram& operator=(JqProgram&&) noexcept;

  // States in the pool, idle, in use or being compiled: at most `copies`, however many callers there are.
  std::size_t states() const;
  // Compiles one more state when the pool has none, or has fewer than `copies` and a run has had to wait
  // for one since the last state was added; false otherwise (or when compiling failed, which for a text
  // that compiled before only memory can make happen). A pool thus holds one state until runs contend for
  // it: an idle process keeps one per program, not one per CPU. Safe from any thread.
  bool prepare() const;

  // Runs the program on `input`, keeping at most `max_outputs` outputs.
  JqOutcome run(const JqInput& input, std::size_t max_outputs) const;
  // The same, handing each output to `sink` as it comes; outcome.outputs is left alone. An exception
  // from `sink` passes through, and the state is still finished and returned to the pool.
  void run(const JqInput& input, std::size_t max_outputs, const std::function<void(json&&)>& sink,
           JqOutcome& outcome) const;

  const std::string& text() const;

 private:
  struct StatePool;
  class Lease;
  std::unique_ptr<StatePool> pool_;
};

// What went wrong with jq states since the process started, for /metrics.
struct JqPoolCounters {
  std::uint64_t states_replaced = 0;  // states abandoned (their run would not end) and compiled anew
  std::uint64_t wait_timeouts = 0;    // runs refused because no state came free within the wait limit
};
JqPoolCounters jq_pool_counters();

// Checks that `text` compiles on its own; returns jq's message when it does not.
std::optional<std::string> jq_compile_error(const std::string& text);

}  // namespace karta

#include "definitions/jq_program.h"

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string_view>

#include <spdlog/spdlog.h>

extern "C" {
#include <jq.h>
}

namespace karta {

struct JqInput::Value {
  jv value;
};

namespace {

jv to_jv(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      return jv_null();
    case json::value_t::boolean:
      return jv_bool(value.get<bool>());
    case json::value_t::number_integer:
      return jv_number(static_cast<double>(value.get<std::int64_t>()));
    case json::value_t::number_unsigned:
      return jv_number(static_cast<double>(value.get<std::uint64_t>()));
    case json::value_t::number_float:
      return jv_number(value.get<double>());
    case json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      return jv_string_sized(s.data(), static_cast<int>(s.size()));
    }
    case json::value_t::binary:
      return jv_null();
    case json::value_t::array: {
      jv array = jv_array_sized(static_cast<int>(value.size()));
      for (const auto& item : value) array = jv_array_append(array, to_jv(item));
      return array;
    }
    case json::value_t::object: {
      jv object = jv_object();
      for (const auto& [key, item] : value.items()) {
        object = jv_object_set(object, jv_string_sized(key.data(), static_cast<int>(key.size())), to_jv(item));
      }
      return object;
    }
  }
  return jv_null();
}

jv to_jv(JsonElement value) {
  using simdjson::dom::element_type;
  switch (value.type()) {
    case element_type::NULL_VALUE:
      return jv_null();
    case element_type::BOOL:
      return jv_bool(value.get_bool().value_unsafe());
    case element_type::INT64:
      return jv_number(static_cast<double>(value.get_int64().value_unsafe()));
    case element_type::UINT64:
      return jv_number(static_cast<double>(value.get_uint64().value_unsafe()));
    case element_type::DOUBLE:
      return jv_number(value.get_double().value_unsafe());
    case element_type::STRING: {
      std::string_view s = value.get_string().value_unsafe();
      return jv_string_sized(s.data(), static_cast<int>(s.size()));
    }
    case element_type::ARRAY: {
      auto items = array_of(value);
      jv array = jv_array_sized(static_cast<int>(items.size()));
      for (auto item : items) array = jv_array_append(array, to_jv(item));
      return array;
    }
    case element_type::OBJECT: {
      jv object = jv_object();
      for (const auto& [key, item] : sorted_members(value)) {
        object = jv_object_set(object, jv_string_sized(key.data(), static_cast<int>(key.size())), to_jv(item));
      }
      return object;
    }
  }
  return jv_null();
}

// Consumes `value`.
json from_jv(jv value) {
  json result;
  switch (jv_get_kind(value)) {
    case JV_KIND_INVALID:
    case JV_KIND_NULL:
      result = nullptr;
      break;
    case JV_KIND_FALSE:
      result = false;
      break;
    case JV_KIND_TRUE:
      result = true;
      break;
    case JV_KIND_NUMBER: {
      double number = jv_number_value(value);
      if (std::isfinite(number) && std::nearbyint(number) == number && std::fabs(number) < 9.007199254740992e15) {
        result = static_cast<std::int64_t>(number);
      } else {
        result = number;
      }
      break;
    }
    case JV_KIND_STRING:
      result = std::string(jv_string_value(value), static_cast<std::size_t>(jv_string_length_bytes(jv_copy(value))));
      break;
    case JV_KIND_ARRAY: {
      result = json::array();
      int length = jv_array_length(jv_copy(value));
      for (int i = 0; i < length; ++i) result.push_back(from_jv(jv_array_get(jv_copy(value), i)));
      break;
    }
    case JV_KIND_OBJECT: {
      result = json::object();
      for (int it = jv_object_iter(value); jv_object_iter_valid(value, it); it = jv_object_iter_next(value, it)) {
        jv key = jv_object_iter_key(value, it);
        std::string name(jv_string_value(key), static_cast<std::size_t>(jv_string_length_bytes(jv_copy(key))));
        jv_free(key);
        result[name] = from_jv(jv_object_iter_value(value, it));
      }
      break;
    }
  }
  jv_free(value);
  return result;
}

void collect_message(void* data, jv message) {
  auto* messages = static_cast<std::string*>(data);
  if (jv_get_kind(message) == JV_KIND_STRING) {
    if (!messages->empty()) messages->append("; ");
    messages->append(jv_string_value(message));
  } else {
    jv text = jv_dump_string(jv_copy(message), 0);
    if (!messages->empty()) messages->append("; ");
    messages->append(jv_string_value(text));
    jv_free(text);
  }
  jv_free(message);
}

// Put before every program. jq 1.6 searches a string for "" forever (jv_string_indexes never advances on
// an empty needle), so `"abc" | index("")` would hold a webhook thread for good. These definitions answer
// that one case as jq 1.7 does (`indices("")` is [], `index("")` and `rindex("")` are null) and hand
// every other input and argument to jq 1.6's own builtin, bound first under another name (a jq `def` is
// recursive, so `def index($i): ... index($i)` would call itself). One line, ended by a newline, so the
// program starts on line 2: compile errors are renumbered by without_prelude_line().
constexpr std::string_view kPrelude =
    "def _karta_indices($i): indices($i); def _karta_index($i): index($i); def _karta_rindex($i): rindex($i); "
    "def indices($i): if $i == \"\" and type == \"string\" then [] else _karta_indices($i) end; "
    "def index($i): if $i == \"\" and type == \"string\" then null else _karta_index($i) end; "
    "def rindex($i): if $i == \"\" and type == \"string\" then null else _karta_rindex($i) end;\n";

// jq 1.6 locates a compile error as "... at <top-level>, line N:" followed by the line; with the prelude
// on line 1, the program's line N is jq's N + 1.
std::string without_prelude_line(std::string message) {
  static constexpr std::string_view kWhere = " at <top-level>, line ";
  for (std::size_t at = message.find(kWhere); at != std::string::npos; at = message.find(kWhere, at + 1)) {
    const std::size_t digits = at + kWhere.size();
    std::size_t end = digits;
    while (end < message.size() && message[end] >= '0' && message[end] <= '9') ++end;
    if (end == digits || end >= message.size() || message[end] != ':') continue;
    const int line = std::stoi(message.substr(digits, end - digits));
    if (line > 1) message.replace(digits, end - digits, std::to_string(line - 1));
  }
  return message;
}

jq_state* compile_state(const std::string& text) {
  jq_state* state = jq_init();
  if (state == nullptr) throw JqCompileError("jq_init failed");
  std::string messages;
  jq_set_error_cb(state, collect_message, &messages);
  const std::string program = std::string(kPrelude) + text;
  int ok = jq_compile(state, program.c_str());
  jq_set_error_cb(state, nullptr, nullptr);
  if (!ok) {
    jq_teardown(&state);
    throw JqCompileError(messages.empty() ? "does not compile" : without_prelude_line(messages));
  }
  return state;
}

}  // namespace

JqInput::JqInput(const json& value) : value_(std::make_unique<Value>(Value{to_jv(value)})) {}
JqInput::JqInput(JsonElement value) : value_(std::make_unique<Value>(Value{to_jv(value)})) {}
JqInput::~JqInput() { jv_free(value_->value); }

namespace {

std::atomic<std::uint64_t> states_replaced{0};
std::atomic<std::uint64_t> wait_timeouts{0};

// Runs `state` to the end of its current run. jq 1.6 asserts (path_len == 0) when a state stopped inside
// path() is reset, and jq_start and jq_teardown reset: a run left half-way (outputs capped, or an
// exception from the caller's sink) must be finished first. Allowed expressions produce outputs bounded by
// their input, so this ends; false when a million more outputs did not end it.
bool finish_run(jq_state* state) {
  constexpr int kDrainLimit = 1'000'000;
  for (int i = 0; i < kDrainLimit; ++i) {
    jv rest = jq_next(state);
    bool finished = !jv_is_valid(rest);
    jv_free(rest);
    if (finished) return true;
  }
  return false;
}

}  // namespace

JqPoolCounters jq_pool_counters() { return {states_replaced.load(), wait_timeouts.load()}; }

struct JqProgram::StatePool {
  std::string text;
  std::chrono::milliseconds wait_limit{0};
  std::mutex mutex;
  std::condition_variable released;
  std::vector<jq_state*> idle;
  std::size_t copies = 1;  // the most states it keeps
  std::size_t states = 0;  // compiled (idle or in use) or being compiled
  // A run found every state in use while the pool had room for more: prepare() may add one. Until then a
  // pool keeps one state, whatever `copies` allows (each costs about 27 KB of libjq's memory).
  bool waited = false;

  ~StatePool() {
    for (jq_state* state : idle) jq_teardown(&state);
  }

  // A state of its own for the caller, or nullptr (with `why`) when none came free within wait_limit. Runs
  // take tens of microseconds and there is one state per CPU, so a wait that long means states are being
  // lost or held: the caller gets an error, never an endless wait. A pool compiled on first use that has
  // no state yet, and none being compiled, compiles one here; with one compiled or compiling, the caller
  // waits for it rather than compiling another (prepare() adds the other copies off the admission threads,
  // once runs have had to wait).
  jq_state* acquire(std::string& why) {
    std::unique_lock lock(mutex);
    const auto deadline = std::chrono::steady_clock::now() + wait_limit;
    while (idle.empty()) {
      if (states == 0) {
        ++states;
        lock.unlock();
        try {
          return compile_state(text);
        } catch (const std::exception& e) {
          lock.lock();
          --states;
          released.notify_all();
          why = std::string("jq program does not compile: ") + e.what();
          return nullptr;
        }
      }
      if (states < copies) waited = true;
      if (released.wait_until(lock, deadline) == std::cv_status::timeout && idle.empty()) {
        why = "no jq state came free within " + std::to_string(wait_limit.count()) + " ms";
        ++wait_timeouts;
        return nullptr;
      }
    }
    jq_state* state = idle.back();
    idle.pop_back();
    return state;
  }

  bool grow() {
    {
      std::lock_guard lock(mutex);
      if (states >= copies || (states > 0 && !waited)) return false;
      ++states;
      waited = false;
    }
    try {
      release(compile_state(text));
      return true;
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(mutex);
        --states;
      }
      released.notify_all();
      spdlog::error("jq program {}: no state compiled: {}", text, e.what());
      return false;
    }
  }

  void release(jq_state* state) {
    {
      std::lock_guard lock(mutex);
      idle.push_back(state);
    }
    released.notify_one();
  }

  // For a state that cannot be reset (its run would not end): it is abandoned, not torn down (teardown
  // would assert), and a fresh one compiled in its place so the pool keeps its size.
  void replace(const char* why) {
    spdlog::error("jq program {}: {}; compiling a replacement state", text, why);
    ++states_replaced;
    try {
      release(compile_state(text));
    } catch (const std::exception& e) {  // compiled before, so only memory can fail here
      std::lock_guard lock(mutex);
      --states;
      spdlog::error("jq program {}: no replacement state: {}", text, e.what());
    }
  }
};

// A state borrowed from the pool for one run. However the run ends (outputs capped, an error, an
// exception from the caller's sink), the state goes back finished and reset, or is replaced.
class JqProgram::Lease {
 public:
  Lease(StatePool& pool, jq_state* state) : pool_(pool), state_(state) {}
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    if (!ended_ && !finish_run(state_)) {
      pool_.replace("a run produced more than a million outputs");
      return;
    }
    // Restart on null so the input is released now rather than at the next run.
    jq_start(state_, jv_null(), 0);
    pool_.release(state_);
  }
  // The run reached its end (jq_next gave no more, or halt): nothing to finish.
  void ended() { ended_ = true; }

 private:
  StatePool& pool_;
  jq_state* state_;
  bool ended_ = false;
};

JqProgram::JqProgram(const std::string& text, std::size_t copies, std::chrono::milliseconds wait_limit,
                     JqCompilation when)
    : pool_(std::make_unique<StatePool>()) {
  pool_->text = text;
  pool_->wait_limit = wait_limit;
  pool_->copies = std::max<std::size_t>(copies, 1);
  if (when == JqCompilation::OnFirstUse) return;
  pool_->idle.push_back(compile_state(text));
  pool_->states = 1;
}

JqProgram::~JqProgram() = default;
JqProgram::JqProgram(JqProgram&&) noexcept = default;
JqProgram& JqProgram::operator=(JqProgram&&) noexcept = default;

const std::string& JqProgram::text() const { return pool_->text; }

std::size_t JqProgram::states() const {
  std::lock_guard lock(pool_->mutex);
  return pool_->states;
}

bool JqProgram::prepare() const { return pool_->grow(); }

JqOutcome JqProgram::run(const JqInput& input, std::size_t max_outputs) const {
  JqOutcome outcome;
  run(input, max_outputs, [&outcome](json&& output) { outcome.outputs.push_back(std::move(output)); }, outcome);
  return outcome;
}

void JqProgram::run(const JqInput& input, std::size_t max_outputs, const std::function<void(json&&)>& sink,
                    JqOutcome& outcome) const {
  std::string why;
  jq_state* state = pool_->acquire(why);
  if (state == nullptr) {
    outcome.error = std::move(why);
    return;
  }
  Lease lease(*pool_, state);
  jq_start(state, jv_copy(input.value().value), 0);
  std::size_t produced = 0;
  while (true) {
    jv result = jq_next(state);
    if (!jv_is_valid(result)) {
      lease.ended();
      if (jv_invalid_has_msg(jv_copy(result))) {
        jv message = jv_invalid_get_msg(result);
        if (jv_get_kind(message) == JV_KIND_STRING) {
          outcome.error = jv_string_value(message);
          jv_free(message);
        } else {
          jv text = jv_dump_string(message, 0);
          outcome.error = jv_string_value(text);
          jv_free(text);
        }
      } else {
        jv_free(result);
      }
      break;
    }
    if (produced >= max_outputs) {
      jv_free(result);
      outcome.capped = true;
      break;
    }
    ++produced;
    sink(from_jv(result));
    if (jq_halted(state)) {
      lease.ended();
      break;
    }
  }
}

std::optional<std::string> jq_compile_error(const std::string& text) {
  try {
    jq_state* state = compile_state(text);
    jq_teardown(&state);
    return std::nullopt;
  } catch (const JqCompileError& e) {
    return std::string(e.what());
  }
}

}  // namespace karta

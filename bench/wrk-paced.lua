-- wrk script for scripts/load-test.sh's constant-rate run: POSTs the file named after `--` as
-- application/json, at the second argument's requests per second for each wrk thread, on an open-loop
-- schedule: the k-th request a thread sends is due k/rate seconds after its first, whatever the answers
-- before it took, and delay() makes the connection that asks wait until the next request is due. (A
-- constant wait after each answer, as this script did before, let the rate follow the server's latency:
-- on a shared machine it could not be calibrated to hold.) A request already late is sent at once, so a
-- stall is followed by a catch-up and the average rate holds; latency is counted from the send, as wrk
-- counts it. done() prints the rate reached and the latency percentiles, p99.9 among them, which wrk's
-- --latency does not print.
--   wrk -t1 -c32 -d10s -s bench/wrk-paced.lua https://127.0.0.1:8443/mutate -- bench/jobset-demo-review.json 18000
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

-- The monotonic clock, in milliseconds, through LuaJIT's FFI (wrk's Lua has no clock finer than a second).
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } karta_paced_timespec;
int clock_gettime(int clock_id, karta_paced_timespec* now);
]]
local CLOCK_MONOTONIC = 1
local clock = ffi.new("karta_paced_timespec")
local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
  return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1000000
end

local interval_ms = 0  -- between two requests of this thread
local due_ms = nil     -- when the next request is due

function init(args)
  local path = args[1] or os.getenv("WRK_BODY_FILE")
  local rate = tonumber(args[2] or "")
  if path == nil or rate == nil or rate <= 0 then
    error("wrk-paced.lua: give the body file and the requests per second of each thread after --")
  end
  local file = assert(io.open(path, "rb"))
  wrk.body = file:read("*a")
  file:close()
  interval_ms = 1000 / rate
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

-- Milliseconds until the next request is due. wrk's timer counts whole milliseconds: a fraction is
-- rounded up or down at random in proportion, so that waits average out to the schedule.
function delay()
  local now = now_ms()
  if due_ms == nil then due_ms = now end
  local wait = due_ms - now
  due_ms = due_ms + interval_ms
  if wait <= 0 then return 0 end
  local whole = math.floor(wait)
  if math.random() < wait - whole then
    return whole + 1
  end
  return whole
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1000000
  local e = summary.errors
  io.write(string.format("paced: %d requests in %.2f s, %.1f req/s\n", summary.requests, seconds, summary.requests / seconds))
  io.write(string.format("paced latency us: p50 %d p99 %d p999 %d max %d\n", latency:percentile(50),
                         latency:percentile(99), latency:percentile(99.9), latency.max))
  io.write(string.format("paced errors: connect %d read %d write %d status %d timeout %d\n", e.connect, e.read,
                         e.write, e.status, e.timeout))
end

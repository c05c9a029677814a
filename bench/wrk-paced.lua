-- wrk script for scripts/load-test.sh's constant-rate run: POSTs the file named after `--` as
-- application/json, and paces each connection with delay(): after each answer the connection waits the
-- second argument's milliseconds (fractional, dithered: wrk's timer counts whole milliseconds) before it
-- sends the next request. done() prints the rate reached and the latency percentiles, p99.9 among them,
-- which wrk's --latency does not print.
--   wrk -t1 -c32 -d10s -s bench/wrk-paced.lua https://127.0.0.1:8443/mutate -- bench/jobset-demo-review.json 1.25
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

local wait_ms = 0

function init(args)
  local path = args[1] or os.getenv("WRK_BODY_FILE")
  if path == nil then
    error("wrk-paced.lua: give the body file and the milliseconds between requests after --")
  end
  local file = assert(io.open(path, "rb"))
  wrk.body = file:read("*a")
  file:close()
  wait_ms = tonumber(args[2] or "0")
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

function delay()
  local whole = math.floor(wait_ms)
  if math.random() < wait_ms - whole then
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

-- wrk script for scripts/load-test.sh: POSTs the file named after `--` as application/json, the same
-- body on every request of a keep-alive connection.
--   wrk -t2 -c50 -d15s --latency -s bench/wrk-post.lua https://127.0.0.1:8443/mutate -- bench/jobset-demo-review.json
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

function init(args)
  local path = args[1] or os.getenv("WRK_BODY_FILE")
  if path == nil then
    error("wrk-post.lua: give the body file after --")
  end
  local file = assert(io.open(path, "rb"))
  wrk.body = file:read("*a")
  file:close()
end

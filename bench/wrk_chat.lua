-- wrk script of bench/run: POSTs bench/http_choice's chat request (the one
-- bench/run records) and prints one machine-readable line when done:
--   RESULT rps=... p50_us=... p99_us=... p999_us=... max_us=... requests=...
--          non2xx=... socket_errors=...
-- A non-2xx answer or a socket error is not a success: rps counts neither.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello for the HTTP baseline benchmark."}]}'

function done(summary, latency, requests)
  local e = summary.errors
  local socket = e.connect + e.read + e.write + e.timeout
  local good = summary.requests - e.status - socket
  if good < 0 then good = 0 end
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT rps=%.1f p50_us=%d p99_us=%d p999_us=%d max_us=%d requests=%d non2xx=%d socket_errors=%d\n",
    good / seconds, latency:percentile(50), latency:percentile(99), latency:percentile(99.9),
    latency.max, summary.requests, e.status, socket))
end

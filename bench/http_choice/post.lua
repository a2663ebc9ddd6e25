-- wrk script: POST bench::kChatRequestBody (bench_bodies.h) to
-- /v1/chat/completions, as conn_load does. Usage:
--   wrk -t2 -c256 -d10s --latency -s post.lua http://127.0.0.1:PORT/v1/chat/completions
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello for the HTTP baseline benchmark."}]}'

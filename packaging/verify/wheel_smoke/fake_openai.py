"""A fake OpenAI Chat Completions upstream on 127.0.0.1:0 for the wheel's
checks in a sandbox (packaging/verify/wheel.sh): each POST to
/v1/chat/completions is answered with respond(request_body) as JSON, and
counted. Standard library only: the sandbox has nothing else.
"""

import http.server
import json
import threading

TIMEOUT = 10.0


class FakeOpenAI:
    """respond: a function from the request's parsed JSON body to the answer
    (a dict). `.url` is http://127.0.0.1:PORT; `.calls` counts the answers;
    close() stops it (idempotent)."""

    def __init__(self, respond):
        fake = self
        self.calls = 0
        self._lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/chat/completions":
                    self.send_error(404, f"fake upstream: no route {self.path}")
                    return
                answer = json.dumps(respond(json.loads(body))).encode()
                with fake._lock:
                    fake.calls += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self):
        if self._thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(TIMEOUT)
            self._thread = None

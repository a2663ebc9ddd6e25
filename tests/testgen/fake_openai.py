"""A scripted stand-in for the OpenAI chat completions API, for recording the
session the testgen tests replay (standard library only).

    python3 fake_openai.py        # first stdout line: "fake_openai listening 127.0.0.1:PORT"

Answers are a pure function of the request, told apart by system prompt:
  orchestrator  continue(phase=execute), or continue(phase=verification)
                once the conversation holds reviewer FEEDBACK;
  executor      write_file(sum.py): v1, or v2 with input validation after
                FEEDBACK;
  reviewer      FEEDBACK: missing input validation, until the last message
                mentions validation; then APPROVED.
Runs until SIGTERM or stdin closes.
"""

import hashlib
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer(request):
    messages = request.get("messages", [])
    system = messages[0]["content"] if messages else ""
    texts = [m.get("content") or "" for m in messages]
    feedback = any("FEEDBACK:" in t for t in texts)
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
    calls = []

    def call(name, arguments):
        calls.append({"id": "call_" + digest[:12], "type": "function",
                      "function": {"name": name, "arguments": json.dumps(arguments)}})

    if "orchestrator" in system:
        phase = "verification" if feedback else "execute"
        content = f"Routing to phase {phase}."
        call("continue", {"phase": phase})
    elif "executor" in system:
        if feedback:
            content = "v2: sum(a, b) now has input validation."
            call("write_file", {"path": "sum.py", "content": "def sum(a, b):\n    assert isinstance(a, int)\n    return a + b\n"})
        else:
            content = "v1: sum(a, b) returns a + b."
            call("write_file", {"path": "sum.py", "content": "def sum(a, b):\n    return a + b\n"})
    elif "reviewer" in system:
        content = "APPROVED" if "validation" in (texts[-1] if texts else "") else \
            "FEEDBACK: missing input validation"
    else:
        content = "echo: " + (texts[-1] if texts else "")
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-" + digest[:16], "object": "chat.completion", "created": 1700000000,
            "model": request.get("model", "fake"),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        try:
            payload = json.dumps(answer(json.loads(body))).encode()
            status = 200
        except (ValueError, KeyError, TypeError) as e:
            payload = json.dumps({"error": {"message": str(e)}}).encode()
            status = 400
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"fake_openai listening 127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()  # until our parent closes it (or kills us)
    server.shutdown()


if __name__ == "__main__":
    main()

"""Cross-protocol replay: an exchange recorded over the OpenAI HTTP API is
answered over gRPC (canonical form), and one recorded over gRPC is answered
over the OpenAI and Anthropic HTTP APIs (rendered in their shapes).
"""

import http.server
import json
import threading
import urllib.error
import urllib.request

import pytest

from conftest import CALL_TIMEOUT
from understudy.v1 import completion_pb2
from understudy.v1 import understudy_pb2

OPENAI_ANSWER = {
    "id": "chatcmpl-cross-1",
    "object": "chat.completion",
    "created": 1763800000,
    "model": "gpt-test",
    "choices": [{
        "index": 0,
        "message": {"role": "assistant", "content": "Use a parser.", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "continue", "arguments": "{\"phase\":\"execute\"}"}}]},
        "finish_reason": "tool_calls"}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
}


class FakeOpenAI:
    """A loopback OpenAI Chat Completions endpoint answering OPENAI_ANSWER."""

    def __init__(self):
        fake = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", "0"))
                self.rfile.read(length)
                fake.requests += 1
                body = json.dumps(OPENAI_ANSWER).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("x-request-id", "req_cross_1")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def post(url, body, headers=None):
    """POSTs JSON; returns (status, headers, parsed body)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


CHAT = {"model": "gpt-test", "messages": [
    {"role": "system", "content": "You are the planner."},
    {"role": "user", "content": "Plan the port parser."}]}


def test_recorded_over_openai_http_replays_over_grpc(start_server):
    fake = FakeOpenAI()
    try:
        server = start_server(extra=["--upstream", f"openai={fake.url}", "--mode", "record",
                                     "--session", "http-rec"])
        status, headers, body = post(f"{server.http}/v1/chat/completions", CHAT,
                                     {"authorization": "Bearer sk-test-cross"})
        assert status == 200, body
        assert body == OPENAI_ANSWER
        assert headers.get("x-request-id") == "req_cross_1"
        assert server.terminate() == 0, server.stderr()
    finally:
        fake.stop()
    assert fake.requests == 1

    server = start_server()
    run = server.runs.StartRun(understudy_pb2.StartRunRequest(
        session="http-rec", mode=understudy_pb2.RUN_MODE_REPLAY), timeout=CALL_TIMEOUT)
    request = completion_pb2.CompletionRequest(model="gpt-test", messages=[
        completion_pb2.Message(role="system", content="You are the planner."),
        completion_pb2.Message(role="user", content="Plan the port parser.")])
    answer = server.model.Complete(request, metadata=(("understudy-run", run.id),),
                                   timeout=CALL_TIMEOUT)
    assert answer.id == "chatcmpl-cross-1"
    assert answer.message.content == "Use a parser."
    assert answer.message.tool_calls[0].name == "continue"
    assert json.loads(answer.message.tool_calls[0].arguments) == {"phase": "execute"}
    assert answer.finish_reason == "tool_calls"
    assert answer.usage.input_tokens == 11 and answer.usage.output_tokens == 5

    # Over HTTP again: the recorded bytes, headers included.
    status, headers, body = post(f"{server.http}/run/{run.id}/v1/chat/completions", CHAT)
    assert status == 404  # the one recording was used by the gRPC call
    assert body["error"]["code"] == "understudy_no_recording"
    assert "already used" in body["error"]["message"]
    assert server.terminate() == 0, server.stderr()


@pytest.fixture
def grpc_recorded(fake_model, start_server):
    """One exchange recorded over gRPC as session "grpc-rec"; returns its answer."""
    server = start_server(upstream=fake_model.target)
    run = server.runs.StartRun(understudy_pb2.StartRunRequest(
        session="grpc-rec", mode=understudy_pb2.RUN_MODE_RECORD), timeout=CALL_TIMEOUT)
    request = completion_pb2.CompletionRequest(
        model="fake-gpt-1", params=completion_pb2.SamplingParams(max_tokens=256), messages=[
            completion_pb2.Message(role="system", content="You are the executor: write the code."),
            completion_pb2.Message(role="user", content="Task: add sum(a, b) to sum.py.")])
    answer = server.model.Complete(
        request, metadata=(("understudy-run", run.id), ("understudy-agent", "executor")),
        timeout=CALL_TIMEOUT)
    server.runs.EndRun(understudy_pb2.EndRunRequest(run=run.id), timeout=CALL_TIMEOUT)
    assert server.terminate() == 0, server.stderr()
    return answer


def test_recorded_over_grpc_replays_over_openai_and_anthropic_http(grpc_recorded, start_server):
    answer = grpc_recorded
    server = start_server()
    headers = {"x-understudy-agent": "executor"}

    run = server.runs.StartRun(understudy_pb2.StartRunRequest(
        session="grpc-rec", mode=understudy_pb2.RUN_MODE_REPLAY), timeout=CALL_TIMEOUT)
    status, _, body = post(f"{server.http}/run/{run.id}/v1/chat/completions", {
        "model": "fake-gpt-1", "max_tokens": 256, "messages": [
            {"role": "system", "content": "You are the executor: write the code."},
            {"role": "user", "content": "Task: add sum(a, b) to sum.py."}]}, headers)
    assert status == 200, body
    assert body["object"] == "chat.completion"
    assert body["id"] == answer.id
    assert body["choices"][0]["message"]["content"] == answer.message.content
    assert body["choices"][0]["finish_reason"] == (answer.finish_reason or "stop")

    run = server.runs.StartRun(understudy_pb2.StartRunRequest(
        session="grpc-rec", mode=understudy_pb2.RUN_MODE_REPLAY), timeout=CALL_TIMEOUT)
    status, _, body = post(f"{server.http}/run/{run.id}/v1/messages", {
        "model": "fake-gpt-1", "max_tokens": 256,
        "system": "You are the executor: write the code.",
        "messages": [{"role": "user", "content": "Task: add sum(a, b) to sum.py."}]},
        {**headers, "anthropic-version": "2023-06-01"})
    assert status == 200, body
    assert body["type"] == "message"
    assert body["id"] == answer.id
    assert body["content"][0] == {"type": "text", "text": answer.message.content}

    # A different max_tokens is a different request: a precise miss names it.
    run = server.runs.StartRun(understudy_pb2.StartRunRequest(
        session="grpc-rec", mode=understudy_pb2.RUN_MODE_REPLAY), timeout=CALL_TIMEOUT)
    status, headers_back, body = post(f"{server.http}/run/{run.id}/v1/messages", {
        "model": "fake-gpt-1", "max_tokens": 100,
        "system": "You are the executor: write the code.",
        "messages": [{"role": "user", "content": "Task: add sum(a, b) to sum.py."}]},
        {**headers, "anthropic-version": "2023-06-01"})
    assert status == 404, body
    assert body["type"] == "error"
    assert headers_back.get("x-understudy-error") == "no_recording"
    assert "params.max_tokens: recorded 256 got 100" in body["error"]["message"]
    assert server.terminate() == 0, server.stderr()

"""Fixtures for the Python end-to-end test: the real `understudy` binary as a
child process, and a scripted fake upstream model served from this process.

Paths come from the environment (ctest sets both):
  UNDERSTUDY_BIN       the understudy binary (default: <repo>/build/cli/understudy)
  UNDERSTUDY_PY_STUBS  generated Python stubs (default: <repo>/build/python)

Every wait is bounded: the first stdout line, process exits and every RPC
(see CALL_TIMEOUT).
"""

import hashlib
import json
import os
import pathlib
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("UNDERSTUDY_BIN") or str(REPO / "build" / "cli" / "understudy")
STUBS = os.environ.get("UNDERSTUDY_PY_STUBS") or str(REPO / "build" / "python")
sys.path.insert(0, STUBS)

import grpc  # noqa: E402
from understudy.v1 import completion_pb2  # noqa: E402
from understudy.v1 import understudy_pb2  # noqa: E402
from understudy.v1 import understudy_pb2_grpc  # noqa: E402

CALL_TIMEOUT = 10  # seconds, for every RPC
START_TIMEOUT = 20  # seconds, for the server's first stdout line
READY = re.compile(r"^understudy serving grpc=(\S+)(?: http=(\S+))? db=(\S+)")


def _sanitized_env():
    """The environment without UNDERSTUDY_* settings that would change serve."""
    return {k: v for k, v in os.environ.items() if not k.startswith("UNDERSTUDY_")}


def _read_line(stream, timeout):
    """Reads one line from a binary pipe, or raises TimeoutError."""
    deadline = time.monotonic() + timeout
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no line within {timeout}s (got {buf!r})")
            if not sel.select(left):
                continue
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
    return buf.split(b"\n", 1)[0].decode()


class ServerProcess:
    """`understudy serve` on 127.0.0.1:0 with stderr captured to a file."""

    def __init__(self, db, stderr_path, upstream=None, extra=()):
        args = [BIN, "serve", "--db", str(db), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"]
        if upstream:
            args += ["--upstream", upstream]
        args += list(extra)
        self.stderr_path = stderr_path
        with open(stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                env=_sanitized_env(), bufsize=0)
        try:
            line = _read_line(self.proc.stdout, START_TIMEOUT)
        except TimeoutError:
            self.kill()
            raise
        match = READY.match(line)
        if not match:
            self.kill()
            raise RuntimeError(f"unexpected first line {line!r}; stderr:\n{self.stderr()}")
        self.address = match.group(1)
        self.http = f"http://{match.group(2)}"
        self.channel = grpc.insecure_channel(
            self.address, options=[("grpc.use_local_subchannel_pool", 1)])
        self.model = understudy_pb2_grpc.ModelStub(self.channel)
        self.runs = understudy_pb2_grpc.RunsStub(self.channel)
        self.sessions = understudy_pb2_grpc.SessionsStub(self.channel)
        self.traces = understudy_pb2_grpc.TracesStub(self.channel)

    def stderr(self):
        return pathlib.Path(self.stderr_path).read_text(errors="replace")

    def terminate(self, sig=signal.SIGTERM, timeout=20):
        """Signals the server and returns its exit code."""
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.kill()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()


# --- The scripted fake upstream ---------------------------------------------

FEEDBACK = "FEEDBACK: missing input validation"


def _tool_call(call_id, name, arguments):
    return completion_pb2.ToolCall(id=call_id, name=name, arguments=arguments)


def scripted_answer(agent, request):
    """The fake's answer: a pure function of (agent, request)."""
    req = completion_pb2.CompletionRequest()
    req.CopyFrom(request)
    req.ClearField("run")
    req.ClearField("agent")
    digest = hashlib.sha256(agent.encode() + b"\0" + req.SerializeToString(deterministic=True))
    answer_id = "py-" + digest.hexdigest()[:16]
    call_id = "call_" + digest.hexdigest()[16:24]
    text = [m.content for m in request.messages]
    has_feedback = any("FEEDBACK:" in t for t in text)
    message = completion_pb2.Message(role="assistant")
    if agent == "orchestrator":
        phase = "verification" if has_feedback else "execute"
        message.content = f"Routing to phase {phase}."
        message.tool_calls.append(_tool_call(call_id, "continue", json.dumps({"phase": phase})))
        finish = "tool_calls"
    elif agent == "executor":
        if has_feedback:
            message.content = "v2: sum(a, b) with input validation."
            code = "def sum(a, b):\n    assert isinstance(a, int) and isinstance(b, int)\n    return a + b\n"
        else:
            message.content = "v1: sum(a, b) returns a + b."
            code = "def sum(a, b):\n    return a + b\n"
        message.tool_calls.append(
            _tool_call(call_id, "write_file", json.dumps({"path": "sum.py", "content": code})))
        finish = "tool_calls"
    elif agent == "reviewer":
        message.content = "APPROVED" if "validation" in (text[-1] if text else "") else FEEDBACK
        finish = "stop"
    else:
        message.content = "echo: " + (text[-1] if text else "")
        finish = "stop"
    usage = completion_pb2.Usage(input_tokens=sum(len(t) for t in text) // 4 + 1,
                                 output_tokens=len(message.content) // 4 + 1)
    return completion_pb2.CompletionResponse(
        id=answer_id, model=request.model or "fake", message=message, finish_reason=finish,
        usage=usage)


def scripted_chunks(agent, request):
    """The same answer as several chunks: text fragments, tool-call deltas, end."""
    whole = scripted_answer(agent, request)

    def chunk(**fields):
        return completion_pb2.CompletionChunk(id=whole.id, model=whole.model, **fields)

    content = whole.message.content
    chunks = [chunk(content=content[i:i + 10]) for i in range(0, len(content), 10)]
    for index, call in enumerate(whole.message.tool_calls):
        half = len(call.arguments) // 2
        chunks.append(chunk(tool_calls=[completion_pb2.ToolCallDelta(
            index=index, id=call.id, name=call.name, arguments=call.arguments[:half])]))
        chunks.append(chunk(tool_calls=[completion_pb2.ToolCallDelta(
            index=index, arguments=call.arguments[half:])]))
    chunks.append(chunk(finish_reason=whole.finish_reason, usage=whole.usage))
    return chunks


class FakeModel(understudy_pb2_grpc.ModelServicer):
    """Serves understudy.v1.Model from the script and counts the calls."""

    def __init__(self):
        self._lock = threading.Lock()
        self.calls = 0
        self.agents = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        understudy_pb2_grpc.add_ModelServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.target = f"grpc://127.0.0.1:{self.port}"

    def _count(self, request, context):
        # understudy forwards the agent in the request, never as metadata.
        agent = request.agent or dict(context.invocation_metadata()).get("understudy-agent", "")
        with self._lock:
            self.calls += 1
            self.agents.append(agent)
        return agent

    def Complete(self, request, context):
        return scripted_answer(self._count(request, context), request)

    def StreamComplete(self, request, context):
        yield from scripted_chunks(self._count(request, context), request)

    def stop(self):
        self.server.stop(grace=None).wait(timeout=10)


@pytest.fixture
def fake_model():
    fake = FakeModel()
    yield fake
    fake.stop()


@pytest.fixture
def start_server(tmp_path):
    """start_server(upstream=None, extra=()) -> ServerProcess on tmp_path/understudy.db."""
    started = []

    def start(upstream=None, extra=()):
        server = ServerProcess(tmp_path / "understudy.db",
                               tmp_path / f"server-{len(started) + 1}.stderr",
                               upstream=upstream, extra=extra)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()

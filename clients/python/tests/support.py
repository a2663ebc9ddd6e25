"""The fake upstream model and the system under test, shared by the tests.

FakeModel serves understudy.v1.Model on 127.0.0.1:0 from a script (a pure
function of agent and request); run_agent_loop is a three-agent system that
calls a model through understudy over gRPC.
"""

import hashlib
import json
import threading
from concurrent import futures

import grpc

from understudy_testing import completion_pb2, understudy_pb2_grpc

CALL_TIMEOUT = 10  # seconds, for every model call

# --- The scripted fake upstream: understudy.v1.Model on 127.0.0.1:0 ---------

FEEDBACK = "FEEDBACK: missing input validation"


def _call_id(agent, request):
    req = completion_pb2.CompletionRequest()
    req.CopyFrom(request)
    req.ClearField("run")
    req.ClearField("agent")
    digest = hashlib.sha256(agent.encode() + b"\0" + req.SerializeToString(deterministic=True))
    return digest.hexdigest()


def scripted_answer(agent, request):
    """The fake's answer, a pure function of (agent, request):

    orchestrator  continue(phase=execute), or continue(phase=verification)
                  once the conversation holds reviewer feedback;
    executor      write_file(sum.py): v1, or v2 with input validation after
                  feedback;
    reviewer      FEEDBACK + continue(phase=rework) for v1, APPROVED +
                  continue(phase=done) once the last message mentions validation.
    """
    digest = _call_id(agent, request)
    call_id = "call_" + digest[16:24]
    texts = [m.content for m in request.messages]
    has_feedback = any("FEEDBACK:" in t for t in texts)
    message = completion_pb2.Message(role="assistant")

    def call(name, arguments):
        message.tool_calls.append(
            completion_pb2.ToolCall(id=call_id, name=name, arguments=json.dumps(arguments)))

    if agent == "orchestrator":
        phase = "verification" if has_feedback else "execute"
        message.content = f"Routing to phase {phase}."
        call("continue", {"phase": phase})
    elif agent == "executor":
        if has_feedback:
            message.content = "v2: sum(a, b) with input validation."
            code = "def sum(a, b):\n    assert isinstance(a, int) and isinstance(b, int)\n    return a + b\n"
        else:
            message.content = "v1: sum(a, b) returns a + b."
            code = "def sum(a, b):\n    return a + b\n"
        call("write_file", {"path": "sum.py", "content": code})
    elif agent == "reviewer":
        if "validation" in (texts[-1] if texts else ""):
            message.content = "APPROVED"
            call("continue", {"phase": "done"})
        else:
            message.content = FEEDBACK
            call("continue", {"phase": "rework"})
    else:
        message.content = "echo: " + (texts[-1] if texts else "")
    usage = completion_pb2.Usage(input_tokens=sum(len(t) for t in texts) // 4 + 1,
                                 output_tokens=len(message.content) // 4 + 1)
    return completion_pb2.CompletionResponse(
        id="fake-" + digest[:16], model=request.model or "fake", message=message,
        finish_reason="tool_calls" if message.tool_calls else "stop", usage=usage)


class FakeModel(understudy_pb2_grpc.ModelServicer):
    """Serves understudy.v1.Model from the script; counts the calls."""

    def __init__(self):
        self._lock = threading.Lock()
        self.calls = 0
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        understudy_pb2_grpc.add_ModelServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.target = f"grpc://127.0.0.1:{self.port}"

    def Complete(self, request, context):
        # understudy forwards the calling agent in the request's agent field.
        agent = request.agent
        with self._lock:
            self.calls += 1
        return scripted_answer(agent, request)

    def stop(self):
        self.server.stop(grace=None).wait(timeout=10)


# --- The system under test: a three-agent loop over understudy.v1.Model ------

AGENTS = ("orchestrator", "executor", "reviewer")
PROMPTS = {
    "orchestrator": "You are the orchestrator. Pick the next phase with continue.",
    "executor": "You are the executor. Write the code with write_file.",
    "reviewer": "You are the reviewer. Give feedback, then continue to the next phase.",
}
TASK = "Write sum(a, b) in sum.py."
TOOLS = {
    "write_file": completion_pb2.ToolDefinition(
        name="write_file", description="Write a file",
        parameters=json.dumps({"type": "object",
                               "properties": {"path": {"type": "string"},
                                              "content": {"type": "string"}}})),
    "continue": completion_pb2.ToolDefinition(
        name="continue", description="Go to the next phase",
        parameters=json.dumps({"type": "object", "properties": {"phase": {"type": "string"}}})),
}
AGENT_TOOLS = {"orchestrator": ["continue"], "executor": ["write_file"], "reviewer": ["continue"]}


def agent_request(agent, transcript):
    messages = [completion_pb2.Message(role="system", content=PROMPTS[agent]),
                completion_pb2.Message(role="user", content=TASK)]
    messages += [completion_pb2.Message(role="user", content=f"{who}: {said}")
                 for who, said in transcript]
    return completion_pb2.CompletionRequest(
        model="fake-model", messages=messages, tools=[TOOLS[t] for t in AGENT_TOOLS[agent]])


def ask(model, run_id, agent, transcript):
    """One model call of `agent` in `run_id`; returns what it said."""
    response = model.Complete(agent_request(agent, transcript),
                              metadata=[("understudy-run", run_id), ("understudy-agent", agent)],
                              timeout=CALL_TIMEOUT)
    calls = " ".join(f"{c.name}({c.arguments})" for c in response.message.tool_calls)
    return f"{response.message.content} {calls}".strip()


def run_agent_loop(model, run_id, max_rounds=3, stop_after=None):
    """orchestrator -> executor -> reviewer until the reviewer approves (at
    most max_rounds rounds; stop_after: at most that many calls). Every agent
    sees what the others said. Returns [(agent, said)]."""
    transcript = []
    for _ in range(max_rounds):
        for agent in AGENTS:
            if stop_after is not None and len(transcript) >= stop_after:
                return transcript
            transcript.append((agent, ask(model, run_id, agent, transcript)))
        if transcript[-1][1].startswith("APPROVED"):
            return transcript
    raise AssertionError(f"the reviewer never approved: {transcript}")

"""The executor → reviewer → executor loop of tests/scenarios/review-loop.yaml
over gRPC from Python: the same conversation tests/node/scenarios.test.js
sends with the OpenAI/Anthropic SDKs, through Model.Complete and
Model.StreamComplete, in a replay run started with that scenario file and no
session. No call names its agent: the scenario's `agents` name them from the
system prompts, and every rule depends on that (agent, per-agent iteration,
previous agent, phase from the extractors). The trace must tell the loop:
agents, rules, iterations, routing, phase transitions, the workflow's end.
"""

import json
import pathlib

import grpc
import pytest

from conftest import CALL_TIMEOUT, REPO
from understudy.v1 import completion_pb2
from understudy.v1 import understudy_pb2

SCENARIO = str((REPO / "tests" / "scenarios" / "review-loop.yaml").resolve())
MODEL = "gpt-4o-mini"

TASK = "Implement login(user, password) against the users table."
PROMPTS = {
    "orchestrator": "You are the orchestrator. Reply with JSON naming the next agents and the phase.",
    "executor": ("You are the executor. Change code with write_file; call continue to hand over, "
                 "complete when done."),
    "reviewer": ("You are a senior engineer: you review the change and call continue with the "
                 "next phase."),
}
TOOL_SPECS = {
    "write_file": {
        "description": "Write a file",
        "parameters": {"type": "object",
                       "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                       "required": ["path", "text"]},
    },
    "continue": {
        "description": "Hand over to the next phase",
        "parameters": {"type": "object", "properties": {"phase": {"type": "string"}},
                       "required": ["phase"]},
    },
    "complete": {
        "description": "The task is done",
        "parameters": {"type": "object", "properties": {"summary": {"type": "string"}},
                       "required": ["summary"]},
    },
}
EXECUTOR_TOOLS = ["write_file", "continue", "complete"]
REVIEWER_TOOLS = ["continue"]

# What each model call must answer, in order: (agent, content, tool calls, finish).
EXPECTED_LOG = [
    ("orchestrator",
     '{"agents": ["executor"], "phase": "implement", "reason": "code first, review after"}',
     [], "stop"),
    ("executor", "Writing login().",
     [("write_file", {"path": "login.py", "text": "def login(user, password): ..."})],
     "tool_calls"),
    ("executor", "login() is written; please review.",
     [("continue", {"phase": "review"})], "tool_calls"),
    ("reviewer", "SQL injection in login(): the query concatenates user input.",
     [("continue", {"phase": "fix"})], "tool_calls"),
    ("executor", "Fixed: login() now uses a parameterized query.",
     [("continue", {"phase": "review"})], "tool_calls"),
    ("reviewer", "Approved: no remaining issues.",
     [("continue", {"phase": "done"})], "tool_calls"),
    ("executor", "Done.",
     [("complete", {"summary": "login() implemented and fixed after review"})], "tool_calls"),
]
LOOP_AGENTS = [agent for agent, _, _, _ in EXPECTED_LOG]
LOOP_RULES = [
    "orchestrator-routes", "executor-writes", "executor-requests-review", "reviewer-finds-hole",
    "executor-fixes", "reviewer-approves", "executor-completes",
]
AGENT_ITERATIONS = ["1", "1", "2", "1", "3", "2", "4"]
PREVIOUS_AGENTS = [None, "orchestrator", "executor", "executor", "reviewer", "executor",
                   "reviewer"]
PHASES = [
    ("", "implement", "orchestrator"),
    ("implement", "review", "executor"),
    ("review", "fix", "reviewer"),
    ("fix", "review", "executor"),
    ("review", "done", "reviewer"),
]
UNEXPECTED_MESSAGE = "review-loop: no rule for this request"


@pytest.fixture
def server(start_server):
    # StartRun names the scenario file: the server may read that directory.
    return start_server(extra=("--scenario-dir", str(pathlib.Path(SCENARIO).parent)))


def start_run(server):
    return server.runs.StartRun(
        understudy_pb2.StartRunRequest(mode=understudy_pb2.RUN_MODE_REPLAY, scenario=SCENARIO),
        timeout=CALL_TIMEOUT)


def end_run(server, run):
    return server.runs.EndRun(understudy_pb2.EndRunRequest(run=run), timeout=CALL_TIMEOUT)


def query(server, run, kinds=()):
    response = server.traces.Query(understudy_pb2.QueryRequest(run=run, kinds=list(kinds)),
                                   timeout=CALL_TIMEOUT)
    assert response.next_after_seq == 0, "the whole trace in one page"
    return list(response.events)


def assemble(chunks):
    """The whole answer from its chunks (text joined, tool calls by index)."""
    response = completion_pb2.CompletionResponse()
    calls = {}
    for c in chunks:
        response.id = response.id or c.id
        response.model = response.model or c.model
        response.message.content += c.content
        for d in c.tool_calls:
            call = calls.setdefault(d.index, completion_pb2.ToolCall())
            call.id = call.id or d.id
            call.name = call.name or d.name
            call.arguments += d.arguments
        if c.finish_reason:
            response.finish_reason = c.finish_reason
        if c.HasField("usage"):
            response.usage.CopyFrom(c.usage)
    response.message.role = "assistant"
    for index in sorted(calls):
        response.message.tool_calls.append(calls[index])
    return response


def check_chunks(chunks, answer):
    """A streamed answer's shape: one id, text then tool calls, the finish last."""
    assert chunks, "a stream with no chunk"
    assert {c.id for c in chunks} == {answer.id}
    assert {c.model for c in chunks} == {MODEL}
    *body, last = chunks
    assert last.finish_reason == answer.finish_reason
    assert last.content == "" and not last.tool_calls
    assert all(not c.finish_reason for c in body), chunks
    assert all(not c.HasField("usage") for c in body), chunks
    # The text comes before the tool calls, never in the same chunk.
    texts = [c for c in body if c.content]
    assert all(not c.tool_calls for c in texts), chunks
    assert body[:len(texts)] == texts, chunks
    if answer.message.content:
        assert len(texts) >= 1


def user(text):
    return completion_pb2.Message(role="user", content=text)


class Model:
    """The provider a multi-agent system would call, over gRPC. The run is
    named by call metadata; the agent never is."""

    def __init__(self, server, run, streamed):
        self.server = server
        self.run = run
        self.streamed = streamed
        self.calls = 0
        self.log = []  # (agent, content, [(name, arguments)], finish) per answer
        self.chunks = []  # per streamed call, the chunks received

    def request(self, agent, conversation, tools):
        return completion_pb2.CompletionRequest(
            model=MODEL,
            messages=[completion_pb2.Message(role="system", content=PROMPTS[agent])]
            + list(conversation),
            tools=[completion_pb2.ToolDefinition(
                name=name, description=TOOL_SPECS[name]["description"],
                parameters=json.dumps(TOOL_SPECS[name]["parameters"])) for name in tools])

    def send(self, request):
        metadata = (("understudy-run", self.run),)
        if self.streamed:
            chunks = list(self.server.model.StreamComplete(request, metadata=metadata,
                                                           timeout=CALL_TIMEOUT))
            self.chunks.append(chunks)
            answer = assemble(chunks)
            check_chunks(chunks, answer)
            return answer
        return self.server.model.Complete(request, metadata=metadata, timeout=CALL_TIMEOUT)

    def ask(self, agent, conversation, tools):
        self.calls += 1
        assert self.calls <= 12, f"the loop did not finish; answers so far: {self.log}"
        answer = self.send(self.request(agent, conversation, tools))
        assert answer.message.role == "assistant"
        self.log.append((agent, answer.message.content,
                         [(c.name, json.loads(c.arguments)) for c in answer.message.tool_calls],
                         answer.finish_reason))
        return answer


def run_review_loop(model):
    """The agent system under test, as in scenarios.test.js: the orchestrator
    picks the first agent; the executor works in a tool loop and hands over
    with continue(phase); the reviewer answers with continue(phase);
    complete() ends it. Returns the files written and the last answer."""
    files = {}
    route = json.loads(model.ask("orchestrator", [user(TASK)], []).message.content)
    following = route["agents"][0]
    inbox = f"{TASK} Phase: {route['phase']}."
    while True:
        if following == "executor":
            conversation = [user(inbox)]
            while True:
                answer = model.ask("executor", conversation, EXECUTOR_TOOLS)
                calls = list(answer.message.tool_calls)
                if any(c.name == "complete" for c in calls):
                    return files, answer
                if any(c.name == "continue" for c in calls):
                    following = "reviewer"
                    inbox = f"Please review: {answer.message.content}"
                    break
                assert calls, f"executor stopped without a tool call: {answer.message.content}"
                conversation.append(answer.message)
                for c in calls:
                    assert c.name == "write_file"
                    assert c.id, "a tool call without id cannot be answered"
                    args = json.loads(c.arguments)
                    files[args["path"]] = args["text"]
                    conversation.append(completion_pb2.Message(
                        role="tool", tool_call_id=c.id,
                        content=f"wrote {len(args['text'])} bytes to {args['path']}"))
        elif following == "reviewer":
            answer = model.ask("reviewer", [user(inbox)], REVIEWER_TOOLS)
            phases = [json.loads(c.arguments).get("phase") for c in answer.message.tool_calls
                      if c.name == "continue"]
            following = "executor"
            if phases and phases[0] == "done":
                inbox = f"The reviewer approved: {answer.message.content} Finish up."
            else:
                inbox = f"Review feedback: {answer.message.content}"
        else:
            pytest.fail(f"routed to unknown agent {following}")


def reviewer_first_request(model):
    """The reviewer's first request of the loop, exactly."""
    return model.request("reviewer", [user("Please review: login() is written; please review.")],
                         REVIEWER_TOOLS)


def check_loop_answers(model, files, last):
    assert model.log == [(a, c, [(n, args) for n, args in t], f) for a, c, t, f in EXPECTED_LOG]
    assert files == {"login.py": "def login(user, password): ..."}
    # The rule's usage reaches the caller; the other rules report none.
    assert (last.usage.input_tokens, last.usage.output_tokens) == (42, 7)
    if model.streamed:
        assert len(model.chunks) == len(EXPECTED_LOG)
        assert model.chunks[-1][-1].usage.input_tokens == 42
        assert all(not any(c.HasField("usage") for c in chunks) for chunks in model.chunks[:-1])
        # The orchestrator's JSON comes in word pieces that join to it.
        pieces = [c.content for c in model.chunks[0][:-1]]
        assert len(pieces) > 1 and "".join(pieces) == EXPECTED_LOG[0][1]


def attr(event, name):
    return event.attributes.get(name)


def check_loop_trace(events, streamed):
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started", kinds
    assert attr(events[0], "understudy.scenario.name") == "review-loop"
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "seq without gaps"
    assert "miss" not in kinds, [attr(e, "understudy.miss.report") for e in events
                                 if e.kind == "miss"]

    ex = [e for e in events if e.kind == "exchange"]
    assert [e.agent for e in ex] == LOOP_AGENTS, "agent order"
    assert [attr(e, "gen_ai.agent.name") for e in ex] == LOOP_AGENTS
    assert [attr(e, "understudy.rule.name") for e in ex] == LOOP_RULES, "rule order"
    assert "unexpected" not in [attr(e, "understudy.rule.name") for e in ex]
    assert [attr(e, "understudy.agent.iteration") for e in ex] == AGENT_ITERATIONS
    assert [attr(e, "understudy.iteration") for e in ex] == [str(i) for i in range(1, 8)]
    assert [attr(e, "understudy.previous_agent") for e in ex] == PREVIOUS_AGENTS
    for e, (_, content, _, finish) in zip(ex, EXPECTED_LOG):
        assert attr(e, "understudy.answer.source") == "rule"
        assert attr(e, "understudy.action") == "respond"
        assert attr(e, "understudy.rule.use") == "1"
        assert attr(e, "understudy.streamed") == ("true" if streamed else "false")
        assert attr(e, "error.type") is None
        assert attr(e, "gen_ai.request.model") == MODEL
        assert attr(e, "gen_ai.response.finish_reasons") == finish
        assert e.response.message.content == content
        # What was sent is stored, without routing.
        assert e.request.messages[0].role == "system"
        assert e.request.agent == "" and e.request.run == ""
    # The executor's second request carried the write_file result.
    assert [m.role for m in ex[2].request.messages] == ["system", "user", "assistant", "tool"]
    assert ex[2].request.messages[3].content == "wrote 30 bytes to login.py"
    assert ex[2].request.messages[3].tool_call_id == ex[1].response.message.tool_calls[0].id

    routing = [e for e in events if e.kind == "routing_decision"]
    assert len(routing) == 1
    assert routing[0].agent == "orchestrator"
    assert attr(routing[0], "understudy.routing.agents") == "executor"
    assert attr(routing[0], "understudy.routing.phase") == "implement"
    assert attr(routing[0], "understudy.routing.reason") == "code first, review after"
    assert ex[0].seq < routing[0].seq < ex[1].seq

    tool_calls = [e for e in events if e.kind == "tool_call"]
    assert [attr(e, "gen_ai.tool.name") for e in tool_calls] == [
        "write_file", "continue", "continue", "continue", "continue", "complete"]
    assert [e.agent for e in tool_calls] == [
        "executor", "executor", "reviewer", "executor", "reviewer", "executor"]

    phases = [e for e in events if e.kind == "phase_transition"]
    assert [(attr(e, "understudy.phase.from"), attr(e, "understudy.phase.to"), e.agent)
            for e in phases] == PHASES
    # The phase turns to review between the executor's hand-over and the reviewer.
    assert ex[2].seq < phases[1].seq < ex[3].seq

    ends = [e for e in events if e.kind == "workflow_end"]
    assert len(ends) == 1, "one workflow_end"
    assert ends[0].agent == "executor"
    assert ends[0].seq > ex[-1].seq, "the workflow ends with the last exchange"
    assert kinds[-1] == "run_ended"


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream_complete"])
def test_review_loop_runs_on_rules_alone_and_the_trace_tells_it(server, streamed):
    run = start_run(server)
    assert run.mode == understudy_pb2.RUN_MODE_REPLAY
    assert run.state == understudy_pb2.RUN_STATE_ACTIVE
    assert run.scenario == "review-loop"
    assert run.session == ""

    model = Model(server, run.id, streamed)
    files, last = run_review_loop(model)
    check_loop_answers(model, files, last)

    summary = end_run(server, run.id)
    assert summary.run.state == understudy_pb2.RUN_STATE_ENDED
    assert summary.run.misses == 0
    assert summary.run.served == 7
    assert list(summary.failures) == []
    assert list(summary.misses) == []

    check_loop_trace(query(server, run.id), streamed)


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream_complete"])
def test_a_request_the_loop_did_not_plan_for_is_answered_by_unexpected(server, streamed):
    run = start_run(server)
    model = Model(server, run.id, streamed)
    run_review_loop(model)
    assert model.log[-1][2][0][0] == "complete"

    # The reviewer's first request once more: its third iteration, which no
    # loop rule plans for. The catch-all's HTTP 500 is INTERNAL over gRPC.
    with pytest.raises(grpc.RpcError) as raised:
        model.send(reviewer_first_request(model))
    error = raised.value
    assert error.code() == grpc.StatusCode.INTERNAL
    assert error.details() == UNEXPECTED_MESSAGE

    summary = end_run(server, run.id)
    assert summary.run.state == understudy_pb2.RUN_STATE_ENDED
    assert summary.run.misses == 0
    assert list(summary.misses) == []

    events = query(server, run.id)
    ex = [e for e in events if e.kind == "exchange"]
    assert [attr(e, "understudy.rule.name") for e in ex] == LOOP_RULES + ["unexpected"]
    extra = ex[-1]
    assert extra.agent == "reviewer"
    assert attr(extra, "understudy.action") == "error"
    assert attr(extra, "understudy.answer.source") == "rule"
    assert attr(extra, "error.type") == "INTERNAL"
    assert attr(extra, "understudy.agent.iteration") == "3"
    assert attr(extra, "understudy.iteration") == "8"
    assert attr(extra, "understudy.previous_agent") == "executor"
    assert not extra.HasField("response")
    assert [m.content for m in extra.request.messages] == [
        PROMPTS["reviewer"], "Please review: login() is written; please review."]
    # The error answer adds no tool call, phase or second end.
    assert len([e for e in events if e.kind == "workflow_end"]) == 1
    assert len([e for e in events if e.kind == "phase_transition"]) == len(PHASES)
    assert "miss" not in [e.kind for e in events]

"""understudy end to end from Python: record a multi-agent session through the
real binary from a live (fake) upstream, restart, replay strictly with the
upstream stopped, and assert on the trace and on a miss report.
"""

import json

import grpc
import pytest

from conftest import CALL_TIMEOUT, FEEDBACK
from understudy.v1 import completion_pb2
from understudy.v1 import understudy_pb2

AGENTS = ["orchestrator", "executor", "reviewer", "orchestrator", "executor", "reviewer"]
STREAMED = [False, True, True, False, True, False]
SYSTEM = {
    "orchestrator": "You are the orchestrator: route the task until the reviewer approves.",
    "executor": "You are the executor: write the code.",
    "reviewer": "You are the reviewer: approve or give FEEDBACK.",
}
TASK = "Task: add sum(a, b) to sum.py."


def _msg(role, content, **kw):
    return completion_pb2.Message(role=role, content=content, **kw)


def _describe(answer):
    calls = " ".join(f"{c.name} {c.arguments}" for c in answer.message.tool_calls)
    return f"{answer.message.content} {calls}".strip()


def build_request(step, answers):
    """The request agent AGENTS[step] sends, given the earlier answers."""
    agent = AGENTS[step]
    messages = [_msg("system", SYSTEM[agent])]
    if step == 0:
        messages.append(_msg("user", TASK))
    elif step == 1:
        messages.append(_msg("user", f"{TASK}\nOrchestrator: {_describe(answers[0])}"))
    elif step in (2, 5):
        messages.append(_msg("user", "Review this change:\n" + _describe(answers[step - 1])))
    elif step == 3:
        messages.append(_msg("user", TASK))
        messages.append(answers[0].message)
        messages.append(_msg("tool", "reviewer: " + answers[2].message.content,
                             tool_call_id=answers[0].message.tool_calls[0].id, name="continue"))
    elif step == 4:
        messages.append(_msg("user", f"{TASK}\nOrchestrator: {_describe(answers[0])}"))
        messages.append(answers[1].message)
        messages.append(_msg("user", "Reviewer feedback: " + answers[2].message.content))
    return completion_pb2.CompletionRequest(
        model="fake-gpt-1", messages=messages,
        params=completion_pb2.SamplingParams(temperature=0.0, max_tokens=256))


def assemble(chunks):
    """The whole answer from its chunks (text joined, tool calls by index)."""
    response = completion_pb2.CompletionResponse()
    calls = {}
    content = ""
    for c in chunks:
        response.id = response.id or c.id
        response.model = response.model or c.model
        content += c.content
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
    response.message.content = content
    for index in sorted(calls):
        response.message.tool_calls.append(calls[index])
    return response


def metadata(run, agent):
    return (("understudy-run", run), ("understudy-agent", agent))


def play_loop(server, run):
    """Plays the six steps in `run`; returns [(request, response, chunk bytes)]."""
    answers, transcript = [], []
    for step, agent in enumerate(AGENTS):
        request = build_request(step, answers)
        if STREAMED[step]:
            chunks = list(server.model.StreamComplete(
                request, metadata=metadata(run, agent), timeout=CALL_TIMEOUT))
            assert len(chunks) >= 3, f"step {step}: expected several chunks"
            response = assemble(chunks)
            # Live chunks carry their arrival offsets, and replays the same:
            # the bytes compare exactly.
            untimed = [c.SerializeToString() for c in chunks]
        else:
            response = server.model.Complete(
                request, metadata=metadata(run, agent), timeout=CALL_TIMEOUT)
            untimed = []
        answers.append(response)
        transcript.append((request, response, untimed))
    return transcript


def start_run(server, session, mode, **kw):
    return server.runs.StartRun(
        understudy_pb2.StartRunRequest(session=session, mode=mode, **kw), timeout=CALL_TIMEOUT)


def end_run(server, run):
    return server.runs.EndRun(understudy_pb2.EndRunRequest(run=run), timeout=CALL_TIMEOUT)


def query(server, run, kinds=()):
    return list(server.traces.Query(
        understudy_pb2.QueryRequest(run=run, kinds=list(kinds)), timeout=CALL_TIMEOUT).events)


@pytest.fixture
def golden(fake_model, start_server):
    """Records the loop as session "py-golden"; returns (transcript, fake)."""
    server = start_server(upstream=fake_model.target)
    run = start_run(server, "py-golden", understudy_pb2.RUN_MODE_RECORD)
    transcript = play_loop(server, run.id)
    summary = end_run(server, run.id)
    assert summary.run.recorded == 6
    assert server.terminate() == 0, server.stderr()
    assert fake_model.agents == AGENTS
    return transcript, fake_model


def test_replay_after_restart_is_identical_with_upstream_stopped(golden, start_server):
    recorded, fake = golden
    # The script went as planned: feedback first, then the fix, then approval.
    assert recorded[2][1].message.content == FEEDBACK
    assert any(FEEDBACK in m.content for m in recorded[4][0].messages)
    assert recorded[5][1].message.content == "APPROVED"
    assert json.loads(recorded[3][1].message.tool_calls[0].arguments) == {"phase": "verification"}

    fake.stop()
    calls_before = fake.calls
    server = start_server(upstream=fake.target)
    run = start_run(server, "py-golden", understudy_pb2.RUN_MODE_REPLAY)
    assert run.strict
    replayed = play_loop(server, run.id)
    assert fake.calls == calls_before

    for step, ((req_a, resp_a, chunks_a), (req_b, resp_b, chunks_b)) in enumerate(
            zip(recorded, replayed)):
        assert req_b.SerializeToString() == req_a.SerializeToString(), f"step {step}"
        assert resp_b.SerializeToString() == resp_a.SerializeToString(), f"step {step}"
        assert chunks_b == chunks_a, f"step {step}"

    summary = end_run(server, run.id)
    assert summary.run.misses == 0
    assert list(summary.misses) == []
    assert list(summary.unconsumed) == []
    assert summary.run.served == 6

    exchanges = query(server, run.id, ["exchange"])
    assert [e.agent for e in exchanges] == AGENTS
    assert [e.seq for e in exchanges] == sorted(e.seq for e in exchanges)
    assert [e.attributes["understudy.answer.source"] for e in exchanges] == ["recording"] * 6
    assert [e.attributes["understudy.exchange.seq"] for e in exchanges] == [
        str(i) for i in range(1, 7)]
    events = query(server, run.id)
    # Every tool call in the replayed answers is traced after its exchange.
    tool_calls = [e for e in events if e.kind == "tool_call"]
    assert [e.attributes["gen_ai.tool.name"] for e in tool_calls] == [
        c.name for e in exchanges for c in e.response.message.tool_calls]
    kinds = [e.kind for e in events if e.kind != "tool_call"]
    # Each step of the loop is a new agent's execution; the orchestrator's
    # second request carries its tool's result.
    assert kinds == (["run_started"] + ["agent_execution", "exchange"] * 3 +
                     ["agent_execution", "tool_result", "exchange"] +
                     ["agent_execution", "exchange"] * 2 + ["run_ended"])
    assert server.terminate() == 0, server.stderr()


def test_changed_prompt_is_a_precise_miss(golden, start_server):
    recorded, fake = golden
    fake.stop()
    server = start_server()
    run = start_run(server, "py-golden", understudy_pb2.RUN_MODE_REPLAY)

    changed = completion_pb2.CompletionRequest()
    changed.CopyFrom(recorded[0][0])
    changed.messages[1].content = "Task: add product(a, b) to product.py."
    with pytest.raises(grpc.RpcError) as error:
        server.model.Complete(changed, metadata=metadata(run.id, "orchestrator"),
                              timeout=CALL_TIMEOUT)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    details = error.value.details()
    assert "closest is exchange #1" in details
    assert ("messages[1].content: recorded " + json.dumps(TASK) + " got "
            + json.dumps(changed.messages[1].content)) in details

    # Requested twice, recorded once: the report says it was used already.
    server.model.Complete(recorded[0][0], metadata=metadata(run.id, "orchestrator"),
                          timeout=CALL_TIMEOUT)
    with pytest.raises(grpc.RpcError) as again:
        server.model.Complete(recorded[0][0], metadata=metadata(run.id, "orchestrator"),
                              timeout=CALL_TIMEOUT)
    assert again.value.code() == grpc.StatusCode.NOT_FOUND
    assert "already used it" in again.value.details()

    summary = end_run(server, run.id)
    assert summary.run.misses == 2
    first, second = summary.misses
    assert first.closest_seq == 1
    assert [(d.path, d.recorded, d.got) for d in first.diffs] == [
        ("messages[1].content", json.dumps(TASK), json.dumps(changed.messages[1].content))]
    assert first.text == details
    assert second.consumed_only
    assert [u.seq for u in summary.unconsumed] == [2, 3, 4, 5, 6]

    misses = query(server, run.id, ["miss"])
    assert [m.agent for m in misses] == ["orchestrator", "orchestrator"]
    assert misses[0].attributes["understudy.miss.report"] == details
    assert misses[0].seq == first.event_seq
    assert server.terminate() == 0, server.stderr()

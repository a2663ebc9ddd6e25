"""understudy_testing against the real binary: record a three-agent loop from a
fake upstream, replay it, and assert on the replay's trace through the client
and the pytest plugin; waits, watches, custom events and errors.

The server is the plugin's `understudy_server` (one per session, a fresh
database, --upstream to the fake in conftest.py). Everything is on 127.0.0.1
and every wait has a bound.
"""

import json
import threading
import time
import urllib.request

import grpc
import pytest

from support import AGENTS, CALL_TIMEOUT, agent_request, run_agent_loop
from understudy_testing import RunHandle, Server, UnderstudyError
from understudy_testing import assertions as A
from understudy_testing import understudy_pb2 as pb

SESSION = "pyclient-golden-loop"
# The replay's scenario: no rules, only the phase extractor, so that the
# answers come from the recording and continue(phase=...) calls make
# phase_transition events.
PHASES = """\
schema: understudy.scenario/v1
name: phases
extractors:
  phase: {tool: continue, argument: phase}
"""
# A scripted model for runs that need no recording.
SCRIPTED = """\
schema: understudy.scenario/v1
name: scripted
default:
  respond: {content: "hello from understudy"}
"""
LOOP = list(AGENTS) * 2  # the loop takes two rounds: feedback, then approval
TOOL_CALLS = [
    ("continue", {"phase": "execute"}),
    ("write_file", {"path": "sum.py"}),
    ("continue", {"phase": "rework"}),
    ("continue", {"phase": "verification"}),
    ("write_file", {"path": "sum.py"}),
    ("continue", {"phase": "done"}),
]


@pytest.fixture(scope="module")
def golden(understudy_client, fake_upstream):
    """Records the loop into SESSION through the server; returns
    (transcript, record run id)."""
    client = understudy_client
    run = client.start_run(mode="record", session=SESSION)
    assert run.mode == pb.RUN_MODE_RECORD
    before = fake_upstream.calls
    transcript = run_agent_loop(client.model, run.id)
    summary = client.end_run(run.id)
    assert [agent for agent, _ in transcript] == LOOP
    assert fake_upstream.calls - before == len(LOOP), "every recorded call reached the fake"
    assert summary.run.state == pb.RUN_STATE_ENDED
    assert summary.run.recorded == len(LOOP)
    assert [r.agent for r in summary.recorded] == LOOP
    # The recording run's trace has the loop as well (tool calls included).
    client.assert_agent_sequence(run.id, LOOP)
    client.assert_count(run.id, "==", 6, kinds="tool_call")
    return transcript, run.id


# --- record -> replay -> assert ----------------------------------------------

@pytest.mark.understudy(mode="replay", session=SESSION, scenario_text=PHASES)
def test_replay_passes_every_assertion(golden, understudy_run, understudy_client, fake_upstream):
    run = understudy_run
    transcript, record_run = golden
    assert isinstance(run, RunHandle)
    assert run.run.mode == pb.RUN_MODE_REPLAY and run.run.session == SESSION
    assert run.run.scenario == "phases"
    assert run.metadata == [("understudy-run", run.id)]

    upstream_calls = fake_upstream.calls
    assert run_agent_loop(understudy_client.model, run.id) == transcript
    assert fake_upstream.calls == upstream_calls, "a replay never calls the upstream"

    run.assert_agent_sequence(LOOP)
    run.assert_agent_sequence(["orchestrator", "executor", "reviewer"], match="prefix")
    run.assert_agent_sequence(["executor", "executor"], match="subsequence")
    run.assert_agent_sequence(LOOP, collapse_repeats=True)  # no agent repeats itself
    run.assert_tool_calls(TOOL_CALLS)
    run.assert_tool_calls(["continue", "write_file"], match="prefix")
    run.assert_tool_calls([("write_file", {"path": "sum.py"})] * 2, agent="executor")
    run.assert_tool_calls([("continue", {"phase": "verification"}), ("continue", {"phase": "done"})],
                          match="subsequence")
    run.assert_phase_transitions(["execute", "rework", "verification", "done"])
    run.assert_phase_transitions(["execute", "rework"], match="prefix")
    run.assert_feedback_propagated("reviewer", "executor", "missing input validation")
    run.assert_count("==", 6, kinds=["exchange"])
    run.assert_count("==", 2, kinds="exchange", agent="executor")
    run.assert_count("==", 4, kinds="tool_call", tool="continue")
    run.assert_count(">=", 1, kinds="tool_call",
                     attribute_patterns={"gen_ai.tool.call.arguments": "verification"})
    run.assert_count("==", 4, kinds="phase_transition")
    run.assert_count("==", 0, kinds="miss")
    run.assert_no_misses()
    run.assert_spec("""\
assertions:
  - name: executor writes sum.py twice
    select: {kind: tool_call, agent: executor, tool: write_file}
    expect:
      count: 2
      attributes:
        gen_ai.tool.call.arguments: {json_subset: {path: sum.py}}
  - phase_transitions: [execute, rework, verification, done]
  - no_misses: true
""")

    # One call, several verdicts.
    verdict = run.check(A.agent_sequence(LOOP, name="loop"), A.no_misses(),
                        A.count("==", 7, kinds="exchange", name="seven exchanges"))
    assert not verdict.passed
    assert [(r.name, r.passed) for r in verdict.results] == [
        ("loop", True), ("no_misses", True), ("seven exchanges", False)]
    assert "FAIL seven exchanges" in verdict.report
    assert "PASS loop" in verdict.report

    # The trace through QueryStream.
    exchanges = run.query(kinds="exchange")
    assert [e.agent for e in exchanges] == LOOP
    assert {e.attributes["understudy.answer.source"] for e in exchanges} == {"recording"}
    assert [e.seq for e in exchanges] == sorted(e.seq for e in exchanges)
    assert exchanges[-1].response.message.content == "APPROVED"
    verification = run.query(kinds="tool_call", tool="continue",
                             attribute_patterns={"gen_ai.tool.call.arguments": "verification"})
    assert len(verification) == 1
    assert json.loads(verification[0].attributes["gen_ai.tool.call.arguments"]) == {
        "phase": "verification"}
    transitions = run.query(kinds="phase_transition")
    assert [e.attributes["understudy.phase.to"] for e in transitions] == [
        "execute", "rework", "verification", "done"]
    first_two = run.query(min_seq=1, max_seq=2)
    assert [e.seq for e in first_two] == [1, 2]
    assert first_two[0].kind == "run_started"

    # all_consumed needs the summary, so the run must have ended.
    with pytest.raises(UnderstudyError) as active:
        run.assert_all_consumed()
    assert active.value.code == grpc.StatusCode.FAILED_PRECONDITION
    summary = run.end()
    assert summary.run.served == 6 and summary.run.misses == 0
    assert not summary.unconsumed
    run.assert_all_consumed()
    assert run.end() is summary  # once

    # The session's trace: the recording run's events, then the replay's.
    runs = []
    for e in understudy_client.query(session=SESSION, kinds="run_started"):
        runs.append(e.run)
    assert record_run in runs and run.id in runs
    assert runs.index(record_run) < runs.index(run.id)


@pytest.mark.understudy(mode="replay", session=SESSION, scenario_text=PHASES)
def test_broken_expectations_raise_readable_diffs(golden, understudy_run, understudy_client):
    run = understudy_run
    transcript, _ = golden
    # Only the first round: the approval round stays unconsumed.
    assert run_agent_loop(understudy_client.model, run.id, stop_after=3) == transcript[:3]

    with pytest.raises(AssertionError) as seq:
        run.assert_agent_sequence(["orchestrator", "reviewer", "executor"])
    text = str(seq.value)
    assert text.startswith("FAIL agent_sequence: agent_sequence (exact)"), text
    assert "expected [orchestrator, reviewer, executor]" in text, text
    assert "but the run had [orchestrator, executor, reviewer]" in text, text
    assert "they first differ at position 2" in text, text
    assert 'expected "reviewer", got "executor"' in text, text

    with pytest.raises(AssertionError) as calls:
        run.assert_tool_calls([("continue", {"phase": "verification"})], match="prefix")
    text = str(calls.value)
    assert "tool_calls (prefix)" in text, text
    assert "position 1" in text and "verification" in text and "execute" in text, text
    assert "arguments differ" in text, text

    with pytest.raises(AssertionError) as phases:
        run.assert_phase_transitions(["execute", "rework", "verification"])
    text = str(phases.value)
    assert "phase_transitions (exact)" in text and "position 3" in text, text

    with pytest.raises(AssertionError) as feedback:
        run.assert_feedback_propagated("reviewer", "executor", "missing input validation")
    text = str(feedback.value)
    assert "feedback_propagated" in text and "missing input validation" in text, text
    assert "executor made no exchange after" in text, text

    with pytest.raises(AssertionError) as count:
        run.assert_count(">", 5, kinds="exchange")
    text = str(count.value)
    assert "count (kind=exchange)" in text and "3" in text, text

    # A request that drifts from the recording misses (strict: NOT_FOUND).
    drifted = agent_request("orchestrator", [("user", "something else")])
    with pytest.raises(grpc.RpcError) as miss:
        understudy_client.model.Complete(
            drifted, metadata=run.agent_metadata("orchestrator"), timeout=CALL_TIMEOUT)
    assert miss.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(AssertionError) as misses:
        run.assert_no_misses()
    text = str(misses.value)
    assert text.startswith("FAIL no_misses: no_misses: the run had"), text
    assert "messages[2]" in text, text

    summary = run.end()
    assert [u.agent for u in summary.unconsumed] == list(AGENTS)
    with pytest.raises(AssertionError) as consumed:
        run.assert_all_consumed()
    text = str(consumed.value)
    assert "all_consumed" in text, text
    for ref in summary.unconsumed:
        assert f"#{ref.seq}" in text, text


# --- waits, watches and custom events ----------------------------------------

@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_wait_for_past_future_and_timeout(understudy_run, understudy_client):
    run = understudy_run
    started = run.wait_for(kinds="run_started", timeout=2)
    assert started.seq == 1 and started.run == run.id

    emitter = threading.Timer(0.3, run.emit, args=("custom.checkpoint",),
                              kwargs={"agent": "executor", "step": 2})
    t0 = time.monotonic()
    emitter.start()
    try:
        event = run.wait_for(kinds="custom.checkpoint", agent="executor", timeout=5)
    finally:
        emitter.join(timeout=5)
    assert 0.2 <= time.monotonic() - t0 < 5
    assert event.kind == "custom.checkpoint" and event.seq == 2
    assert event.attributes["step"] == "2"
    # Past events come back at once.
    again = run.wait_for(kinds="custom.checkpoint", timeout=1)
    assert again.seq == event.seq

    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as timeout:
        run.wait_for(kinds="custom.never", timeout=0.5)
    assert 0.4 <= time.monotonic() - t0 < 5
    text = str(timeout.value)
    assert "custom.never" in text and "came in time" in text, text
    assert f'run "{run.id}" is active' in text, text
    assert "custom.checkpoint" in text, text  # the last event

    run.end()
    with pytest.raises(UnderstudyError) as ended:
        run.wait_for(kinds="custom.never", timeout=2)
    assert ended.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "custom.never" in ended.value.message


@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_wait_for_state_and_done_of_a_simulated_agent(understudy_run):
    # sim.state events as `understudy sim` emits them, faked with Emit.
    run = understudy_run

    def state(agent, to, source):
        return run.emit("sim.state", agent=agent, **{"understudy.sim.state": to,
                                                     "understudy.sim.state.from": source,
                                                     "understudy.sim.reason": "test"})

    state("coder", "STARTING", "")
    idle = state("coder", "IDLE", "STARTING")
    state("coder", "WORKING", "IDLE")
    state("other", "WORKING", "IDLE")
    state("other", "IDLE", "WORKING")  # another agent's turn ends: not coder's

    assert run.wait_for_state("coder", "IDLE", timeout=1).seq == idle.seq
    assert run.wait_for_state("other", "IDLE", timeout=1).seq == idle.seq + 3
    with pytest.raises(TimeoutError):
        run.wait_for_state("coder", "IDLE", after_seq=idle.seq, timeout=0.3)
    with pytest.raises(TimeoutError):
        run.wait_for_done("coder", timeout=0.3)  # STARTING -> IDLE is no turn

    emitter = threading.Timer(0.3, state, args=("coder", "IDLE", "WORKING"))
    t0 = time.monotonic()
    emitter.start()
    try:
        done = run.wait_for_done("coder", after_seq=idle.seq, timeout=5)
    finally:
        emitter.join(timeout=5)
    assert 0.2 <= time.monotonic() - t0 < 5
    assert done.seq == idle.seq + 4 and done.agent == "coder"
    assert done.attributes["understudy.sim.state.from"] == "WORKING"
    assert run.wait_for_done("coder", timeout=1).seq == done.seq  # past events count too

    # ASKING -> DONE ends a turn; IDLE -> DONE (an /exit between turns) does not.
    exited = state("coder", "DONE", "IDLE")
    with pytest.raises(TimeoutError):
        run.wait_for_done("coder", after_seq=done.seq, timeout=0.3)
    assert run.wait_for_state("coder", "DONE", after_seq=done.seq, timeout=1).seq == exited.seq
    state("asker", "ASKING", "WORKING")
    asked = state("asker", "CRASHED", "ASKING")
    assert understudy_run.client.wait_for_done(run.id, "asker", timeout=1).seq == asked.seq


@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_watch_until_the_run_ends(understudy_run, understudy_client):
    run = understudy_run

    def drive():
        time.sleep(0.3)
        for step in range(3):
            run.emit("custom.step", step=step)
        request = agent_request("executor", [])
        understudy_client.model.Complete(request, metadata=run.agent_metadata("executor"),
                                         timeout=CALL_TIMEOUT)
        time.sleep(0.2)
        run.end()

    driver = threading.Thread(target=drive, daemon=True)
    t0 = time.monotonic()
    driver.start()
    events = list(run.watch(timeout=15))
    driver.join(timeout=10)
    assert time.monotonic() - t0 < 15
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended", kinds
    assert kinds.count("custom.step") == 3 and "exchange" in kinds, kinds
    assert [e.seq for e in events] == list(range(1, len(events) + 1)), "no gaps, in order"
    assert [e.attributes["step"] for e in events if e.kind == "custom.step"] == ["0", "1", "2"]

    # A filtered watch of an ended run: its stored events, then the end.
    steps = list(run.watch(kinds="custom.step", after_seq=events[2].seq, timeout=5))
    assert [e.seq for e in steps] == [e.seq for e in events if e.kind == "custom.step"
                                      and e.seq > events[2].seq]


@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_watch_closed_early_cancels(understudy_run):
    watch = understudy_run.watch(timeout=10)
    t0 = time.monotonic()
    assert next(watch).kind == "run_started"
    watch.close()  # cancels the call; nothing hangs
    assert time.monotonic() - t0 < 5
    understudy_run.emit("custom.after_close")
    assert understudy_run.wait_for(kinds="custom.after_close", timeout=2).seq == 2


# --- trace levels ---------------------------------------------------------------

@pytest.mark.understudy(scenario_text=SCRIPTED, trace_level="summary")
def test_a_summary_level_run_keeps_its_start_and_end_and_every_count(understudy_run,
                                                                     understudy_client):
    run = understudy_run
    assert run.run.trace_level == pb.TRACE_LEVEL_SUMMARY
    understudy_client.model.Complete(agent_request("executor", []),
                                     metadata=run.agent_metadata("executor"), timeout=CALL_TIMEOUT)
    assert run.end().run.served == 1
    assert [e.kind for e in run.query()] == ["run_started", "run_ended"]


def test_an_off_level_run_keeps_no_event_and_levels_are_checked(understudy_client):
    with understudy_client.open_run(scenario_text=SCRIPTED, trace_level="off") as run:
        assert run.run.trace_level == pb.TRACE_LEVEL_OFF
        understudy_client.model.Complete(agent_request("executor", []),
                                         metadata=run.agent_metadata("executor"),
                                         timeout=CALL_TIMEOUT)
    assert run.summary.run.served == 1
    assert run.query() == []
    with pytest.raises(ValueError, match="trace_level: 'loud' is not one of full, summary, off"):
        understudy_client.start_run(scenario_text=SCRIPTED, trace_level="loud")


@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_emit_returns_the_event_and_validates(understudy_run, understudy_client):
    run = understudy_run
    event = run.emit("custom.approval", agent="reviewer", approved=True, n=3,
                     detail={"b": 1}, **{"app.note": "ok"})
    assert event.run == run.id and event.seq == 2 and event.kind == "custom.approval"
    assert event.agent == "reviewer"
    assert dict(event.attributes) == {"approved": "true", "n": "3", "detail": '{"b": 1}',
                                      "app.note": "ok", "gen_ai.agent.name": "reviewer"}
    assert [e.seq for e in run.query(kinds="custom.approval", agent="reviewer")] == [2]

    with pytest.raises(UnderstudyError) as reserved:
        run.emit("exchange")
    assert reserved.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "understudy's own" in reserved.value.message
    with pytest.raises(UnderstudyError) as malformed:
        run.emit("Not A Kind")
    assert malformed.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "[a-z][a-z0-9_.]*" in malformed.value.message
    assert str(malformed.value).startswith("Emit: INVALID_ARGUMENT: kind:")
    with pytest.raises(UnderstudyError) as unnamed:
        run.emit("custom.x", **{"": "no name"})
    assert unnamed.value.code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(UnderstudyError) as unknown:
        understudy_client.emit("no-such-run", "custom.x")
    assert unknown.value.code == grpc.StatusCode.NOT_FOUND
    # Nothing refused reached the trace.
    assert [e.kind for e in run.query()] == ["run_started", "custom.approval"]


# --- errors, HTTP base URLs, the server launcher, the plugin --------------------

def test_server_errors_surface_as_understudy_errors(understudy_client):
    client = understudy_client
    with pytest.raises(UnderstudyError) as unknown_session:
        client.start_run(mode="replay", session="no-such-session")
    assert unknown_session.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(UnderstudyError) as bad_scenario:
        client.start_run(scenario_text="schema: nope\n")
    assert bad_scenario.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_scenario.value.message.startswith("scenario: ")
    with pytest.raises(UnderstudyError) as no_run:
        client.end_run("no-such-run")
    assert no_run.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(UnderstudyError) as neither:
        client.query()
    assert neither.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "give exactly one" in neither.value.message
    with pytest.raises(ValueError):
        client.start_run(mode="rewind")
    with pytest.raises(ValueError):
        A.count("=~", 1)

    run = client.start_run(scenario_text=SCRIPTED, strict=False)
    assert not run.strict
    try:
        with pytest.raises(UnderstudyError) as bad_spec:
            client.assert_spec(run.id, "assertions:\n  - select: {kind: exchange}\n    expect: {cuont: 1}\n")
        assert bad_spec.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "cuont" in bad_spec.value.message
        with pytest.raises(UnderstudyError) as bad_pattern:
            client.query(run.id, attribute_patterns={"gen_ai.tool.name": "("})
        assert bad_pattern.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "gen_ai.tool.name" in bad_pattern.value.message
        with pytest.raises(UnderstudyError) as bad_args:
            client.assert_tool_calls(run.id, [("continue", "[1, 2]")])
        assert bad_args.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "calls[0].arguments" in bad_args.value.message
    finally:
        client.end_run(run.id)


@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_http_base_urls_reach_the_run(understudy_run, understudy_server):
    run = understudy_run
    assert run.openai_base_url == f"{understudy_server.http}/run/{run.id}/v1"
    assert run.anthropic_base_url == f"{understudy_server.http}/run/{run.id}"

    def post(url, body, headers):
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"content-type": "application/json", **headers})
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT) as response:
            return json.loads(response.read())

    openai = post(f"{run.openai_base_url}/chat/completions",
                  {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
                  {"authorization": "Bearer unused"})
    assert openai["choices"][0]["message"]["content"] == "hello from understudy"
    anthropic = post(f"{run.anthropic_base_url}/v1/messages",
                     {"model": "claude-x", "max_tokens": 16,
                      "messages": [{"role": "user", "content": "hi"}]},
                     {"x-api-key": "unused", "anthropic-version": "2023-06-01"})
    assert anthropic["content"][0]["text"] == "hello from understudy"
    run.assert_count("==", 2, kinds="exchange")


def test_server_start_and_stop(tmp_path):
    db = tmp_path / "own.db"
    with Server.start(db=db) as server:
        assert server.address.startswith("127.0.0.1:")
        assert server.http.startswith("http://127.0.0.1:")
        assert server.db == str(db)
        with server.client(timeout=5) as client:
            with client.open_run(scenario_text=SCRIPTED, http=server.http) as run:
                assert run.openai_base_url.startswith(server.http)
                run.emit("custom.hello")
            assert run.summary.run.state == pb.RUN_STATE_ENDED
    assert not server.running()
    assert server.stop() == 0  # a clean drain, idempotent
    assert db.exists()

    with pytest.raises(RuntimeError) as bad:
        Server.start(binary="/bin/true", start_timeout=5)
    assert "exited with code 0 before its serving line" in str(bad.value)
    with pytest.raises(FileNotFoundError):
        Server.start(binary=str(tmp_path / "missing"))


INNER_TEST = '''
import pytest

SCRIPTED = {scripted!r}


@pytest.mark.understudy(scenario_text=SCRIPTED, run_id="{run_id}")
def test_passes(understudy_run, understudy_server):
    assert understudy_run.id == "{run_id}"
    assert understudy_server.address == "{address}"
    assert understudy_run.openai_base_url == "{http}/run/{run_id}/v1"
    understudy_run.emit("custom.inner")
    understudy_run.assert_count("==", 1, kinds="custom.inner")


@pytest.mark.understudy(scenario_text=SCRIPTED)
def test_fails_with_report(understudy_run):
    understudy_run.assert_agent_sequence(["planner"])
'''


def test_plugin_attaches_to_a_running_server(pytester, understudy_server, understudy_client,
                                             monkeypatch):
    import os
    import understudy_testing
    run_id = f"inner-{os.getpid()}-{int(time.time() * 1000)}"
    pytester.makepyfile(test_inner=INNER_TEST.format(
        scripted=SCRIPTED, run_id=run_id, address=understudy_server.address,
        http=understudy_server.http))
    package_dir = os.path.dirname(os.path.dirname(understudy_testing.__file__))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (package_dir, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("UNDERSTUDY_ADDR", understudy_server.address)
    monkeypatch.setenv("UNDERSTUDY_HTTP", understudy_server.http)
    result = pytester.runpytest_subprocess(
        "-p", "understudy_testing.pytest_plugin", "-p", "no:cacheprovider", "-q", timeout=60)
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "agent_sequence (exact): expected [planner] but the run had []" in output
    assert "Captured understudy setup" in output and "run test_fails_with_report-" in output
    # The inner run happened on this server, and its teardown ended it.
    inner = understudy_client.get_run(run_id)
    assert inner.state == pb.RUN_STATE_ENDED
    assert [e.kind for e in understudy_client.query(run_id)] == [
        "run_started", "custom.inner", "run_ended"]

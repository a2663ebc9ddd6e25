"""Scenarios over gRPC from Python: a scripted model (playbook) drives a
plan-approval agent whose tools (Tools.Invoke) and user (Ui.Ask) are mocked
by the same scenario, with no session recorded; the run's end reports a
script that was not followed; invalid scenarios are refused with the
validator's report; a shipped pack loads by name.
"""

import json

import grpc
import pytest

from conftest import CALL_TIMEOUT
from understudy.v1 import completion_pb2
from understudy.v1 import understudy_pb2
from understudy.v1 import understudy_pb2_grpc

AGENT = "planner"
SYSTEM = "You are the planner: propose a plan, get it approved, then carry it out."

# The plan-approval flow. Turn 0 proposes a plan and captures its id from
# plan_propose's result; turn 1 (after the user approves) passes the captured
# id to plan_approve: a value the scenario does not know when it is loaded.
PLAN_APPROVAL = """\
schema: understudy.scenario/v1
name: plan-approval
playbook:
  turns:
    - when: 'make a plan'
      actions:
        - call: {tool: plan_propose, args: {goal: ship}}
        - say: {text: "Plan {{plan_id}} is ready."}
      capture:
        plan_id: {from_tool_result: plan_propose, regex: '(PLAN-[0-9a-f]+)'}
    - when: '(?i)^approve'
      actions:
        - call: {tool: plan_approve, args: {id: '{{plan_id}}'}}
        - say: {text: "Done: {{plan_id}} is approved."}
mock_tools:
  plan_propose: {template: "created PLAN-4f2a for {{goal}}"}
  plan_approve: "approved"
  weather: {template: "sunny in {{city}}"}
  calc: {result: {value: 42, unit: "m"}}
mock_ui: {confirm: true, select: 1, input: "ship it friday", editor: "edited by the mock"}
"""

MOCKED_TOOLS = ["calc", "plan_approve", "plan_propose", "weather"]

# Two problems, at known positions: the report must name both.
INVALID = """\
schema: understudy.scenario/v1
name: broken
rules:
  - name: r1
    when: {agnet: executor}
    respond: {content: hi}
  - name: r2
    error: {grpc_code: SLOW_DOWN}
"""


class Stubs:
    """The services a scenario-driven agent talks to, on the server's channel."""

    def __init__(self, server):
        self.server = server
        self.model = server.model
        self.runs = server.runs
        self.traces = server.traces
        self.tools = understudy_pb2_grpc.ToolsStub(server.channel)
        self.ui = understudy_pb2_grpc.UiStub(server.channel)


@pytest.fixture
def stubs(start_server):
    return Stubs(start_server())


def start_scenario_run(stubs, text="", scenario="", run_id=""):
    return stubs.runs.StartRun(
        understudy_pb2.StartRunRequest(mode=understudy_pb2.RUN_MODE_REPLAY, scenario=scenario,
                                       scenario_text=text, run_id=run_id),
        timeout=CALL_TIMEOUT)


def end_run(stubs, run):
    return stubs.runs.EndRun(understudy_pb2.EndRunRequest(run=run), timeout=CALL_TIMEOUT)


def query(stubs, run, kinds=()):
    return list(stubs.traces.Query(
        understudy_pb2.QueryRequest(run=run, kinds=list(kinds)), timeout=CALL_TIMEOUT).events)


def metadata(run, agent=AGENT):
    return (("understudy-run", run), ("understudy-agent", agent))


def rpc_error(call, *args, **kwargs):
    """The grpc.RpcError `call` raises (fails the test when it succeeds)."""
    with pytest.raises(grpc.RpcError) as error:
        call(*args, **kwargs)
    return error.value


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
    response.message.role = "assistant"
    for index in sorted(calls):
        response.message.tool_calls.append(calls[index])
    return response


class Agent:
    """A minimal agent loop: the conversation so far, a model, tools, a user."""

    def __init__(self, stubs, run, streamed=False):
        self.stubs = stubs
        self.run = run
        self.streamed = streamed
        self.messages = [completion_pb2.Message(role="system", content=SYSTEM)]
        self.chunks = []  # per streamed model call, the chunks received

    def user(self, text):
        self.messages.append(completion_pb2.Message(role="user", content=text))

    def request(self):
        return completion_pb2.CompletionRequest(
            model="scripted-1", messages=self.messages,
            tools=[completion_pb2.ToolDefinition(name="plan_propose"),
                   completion_pb2.ToolDefinition(name="plan_approve")])

    def think(self):
        """One model call; its answer joins the conversation."""
        if self.streamed:
            chunks = list(self.stubs.model.StreamComplete(
                self.request(), metadata=metadata(self.run), timeout=CALL_TIMEOUT))
            self.chunks.append(chunks)
            answer = assemble(chunks)
        else:
            answer = self.stubs.model.Complete(
                self.request(), metadata=metadata(self.run), timeout=CALL_TIMEOUT)
        self.messages.append(answer.message)
        return answer

    def act(self, call, by_name=False):
        """Runs the tool call through Tools.Invoke; the result joins the
        conversation as a tool message answering the call by its id (or, with
        `by_name`, naming the tool instead)."""
        result = self.stubs.tools.Invoke(
            understudy_pb2.InvokeToolRequest(run=self.run, agent=AGENT, tool=call.name,
                                             arguments=call.arguments, call_id=call.id),
            timeout=CALL_TIMEOUT)
        message = completion_pb2.Message(role="tool", content=result.content)
        if by_name:
            message.name = call.name
        else:
            message.tool_call_id = call.id
        self.messages.append(message)
        return result

    def ask(self, kind, prompt, items=(), initial=""):
        return self.stubs.ui.Ask(
            understudy_pb2.AskRequest(run=self.run, agent=AGENT, kind=kind, prompt=prompt,
                                      items=list(items), initial=initial),
            timeout=CALL_TIMEOUT)


def only_call(answer):
    assert len(answer.message.tool_calls) == 1, answer
    return answer.message.tool_calls[0]


def propose(agent, by_name=False):
    """Turn 0: the model proposes a plan through the tool, then presents it."""
    agent.user("Please make a plan to ship the release.")
    first = agent.think()
    call = only_call(first)
    assert call.name == "plan_propose"
    assert json.loads(call.arguments) == {"goal": "ship"}
    assert first.finish_reason == "tool_calls"
    proposed = agent.act(call, by_name=by_name)
    assert proposed.content == "created PLAN-4f2a for ship"
    assert proposed.mocked
    second = agent.think()
    assert list(second.message.tool_calls) == []
    assert second.finish_reason == "stop"
    return second


def approve(agent):
    """Turn 1: the user approves; the model approves the plan it captured."""
    agent.user("approve")
    third = agent.think()
    call = only_call(third)
    assert call.name == "plan_approve"
    # Late-bound: the id came from plan_propose's result, at run time.
    assert json.loads(call.arguments) == {"id": "PLAN-4f2a"}
    assert agent.act(call).content == "approved"
    fourth = agent.think()
    assert fourth.message.content == "Done: PLAN-4f2a is approved."
    assert list(fourth.message.tool_calls) == []
    return fourth


@pytest.mark.parametrize("streamed", [False, True], ids=["unary", "streamed"])
def test_plan_approval_flow_entirely_over_grpc(stubs, streamed):
    run = start_scenario_run(stubs, PLAN_APPROVAL)
    assert run.mode == understudy_pb2.RUN_MODE_REPLAY
    assert run.session == ""
    assert run.scenario == "plan-approval"
    assert run.state == understudy_pb2.RUN_STATE_ACTIVE

    agent = Agent(stubs, run.id, streamed=streamed)
    presented = propose(agent)
    # The captured id, not a placeholder.
    assert presented.message.content == "Plan PLAN-4f2a is ready."

    confirm = agent.ask(understudy_pb2.UI_KIND_CONFIRM, "Approve " + presented.message.content)
    assert confirm.kind == understudy_pb2.UI_KIND_CONFIRM
    assert confirm.confirmed
    assert confirm.mocked
    approve(agent)

    if streamed:
        # A said text comes one chunk per word, then a finish chunk; a call
        # comes as tool-call chunk(s), then a finish chunk.
        said = agent.chunks[1]
        assert [c.content for c in said[:-1]] == ["Plan ", "PLAN-4f2a ", "is ", "ready."]
        assert all(not c.tool_calls for c in said)
        assert said[-1].finish_reason == "stop"
        assert said[-1].content == ""
        call = agent.chunks[2]
        assert call[-1].finish_reason == "tool_calls"
        assert all(c.tool_calls and not c.content for c in call[:-1]), call
        assert all(not c.finish_reason for c in call[:-1])

    summary = end_run(stubs, run.id)
    assert list(summary.failures) == []
    assert summary.run.state == understudy_pb2.RUN_STATE_ENDED
    assert summary.run.misses == 0
    assert summary.run.served == 4

    # The trace tells the same story, mocks marked as such.
    events = query(stubs, run.id, ["exchange", "tool_result", "ui_call"])
    assert [e.kind for e in events] == [
        "exchange", "tool_result", "exchange", "ui_call", "exchange", "tool_result", "exchange"]
    assert [e.attributes["understudy.answer.source"] for e in events if e.kind == "exchange"] == [
        "playbook"] * 4
    mocked = [e for e in events if e.kind != "exchange"]
    assert [e.attributes.get("understudy.mocked") for e in mocked] == ["true"] * 3
    assert [e.agent for e in mocked] == [AGENT] * 3
    tools = [e.attributes.get("gen_ai.tool.name") for e in events if e.kind == "tool_result"]
    assert tools == ["plan_propose", "plan_approve"]


def test_capture_reads_a_tool_result_named_by_the_message(stubs):
    """A tool message without tool_call_id, naming its tool, feeds the capture."""
    run = start_scenario_run(stubs, PLAN_APPROVAL)
    agent = Agent(stubs, run.id)
    presented = propose(agent, by_name=True)
    assert presented.message.content == "Plan PLAN-4f2a is ready."
    approve(agent)
    summary = end_run(stubs, run.id)
    assert summary.run.state == understudy_pb2.RUN_STATE_ENDED
    assert list(summary.failures) == []


def test_run_that_stops_early_fails_with_the_actions_left(stubs):
    run = start_scenario_run(stubs, PLAN_APPROVAL)
    agent = Agent(stubs, run.id)
    propose(agent)  # turn 0 only: the approval never comes
    summary = end_run(stubs, run.id)
    assert summary.run.state == understudy_pb2.RUN_STATE_FAILED
    assert list(summary.failures) == [
        "playbook not fully consumed: 2 actions remaining (next: playbook.turns[1].actions[0])"]
    # Ending again gives the same verdict.
    again = end_run(stubs, run.id)
    assert again.run.state == understudy_pb2.RUN_STATE_FAILED
    assert list(again.failures) == list(summary.failures)


def test_request_after_the_playbook_is_done_fails_and_is_reported(stubs):
    run = start_scenario_run(stubs, PLAN_APPROVAL)
    agent = Agent(stubs, run.id)
    propose(agent)
    approve(agent)
    agent.user("And now?")
    extra = rpc_error(agent.think)
    assert extra.code() == grpc.StatusCode.NOT_FOUND
    details = extra.details()
    assert "playbook" in details

    summary = end_run(stubs, run.id)
    assert summary.run.state == understudy_pb2.RUN_STATE_FAILED
    assert len(summary.failures) == 1, list(summary.failures)
    # The failure is that request's message; nothing is left unconsumed.
    assert summary.failures[0] in details, (summary.failures[0], details)
    assert "not fully consumed" not in summary.failures[0]


def test_tools_invoke_answers_each_kind_of_mock(stubs):
    run = start_scenario_run(stubs, PLAN_APPROVAL)

    def invoke(tool, arguments="", **kw):
        return stubs.tools.Invoke(
            understudy_pb2.InvokeToolRequest(tool=tool, arguments=arguments, **kw),
            timeout=CALL_TIMEOUT, metadata=metadata(run.id))

    # The run named by metadata only.
    weather = invoke("weather", json.dumps({"city": "Oslo"}))
    assert weather.content == "sunny in Oslo"
    assert json.loads(weather.result) == "sunny in Oslo"
    assert weather.mocked
    plain = invoke("plan_approve", json.dumps({"id": "PLAN-1"}))
    assert plain.content == "approved"
    assert json.loads(plain.result) == "approved"
    calc = invoke("calc", "")  # "" means {}
    assert json.loads(calc.result) == {"value": 42, "unit": "m"}
    assert json.loads(calc.content) == {"value": 42, "unit": "m"}
    assert calc.mocked

    # The caller's mistakes.
    missing = rpc_error(invoke, "weather", json.dumps({"town": "Oslo"}))
    assert missing.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "city" in missing.details()
    not_object = rpc_error(invoke, "weather", "[1, 2]")
    assert not_object.code() == grpc.StatusCode.INVALID_ARGUMENT
    end_run(stubs, run.id)


def test_tools_invoke_unknown_tool_lists_the_mocked_ones(stubs):
    run = start_scenario_run(stubs, PLAN_APPROVAL)
    error = rpc_error(stubs.tools.Invoke,
                      understudy_pb2.InvokeToolRequest(run=run.id, agent=AGENT, tool="deploy",
                                                       arguments="{}"),
                      timeout=CALL_TIMEOUT)
    assert error.code() == grpc.StatusCode.NOT_FOUND
    details = error.details()
    assert "deploy" in details
    for tool in MOCKED_TOOLS:
        assert tool in details, details
    # The refusal is traced too.
    results = query(stubs, run.id, ["tool_result"])
    assert [e.attributes.get("gen_ai.tool.name") for e in results] == ["deploy"]
    assert results[0].attributes.get("understudy.mocked") == "true"


def test_tools_invoke_needs_a_known_run(stubs):
    error = rpc_error(stubs.tools.Invoke,
                      understudy_pb2.InvokeToolRequest(run="no-such-run", tool="weather"),
                      timeout=CALL_TIMEOUT)
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_ui_ask_answers_each_kind_from_mock_ui(stubs):
    run = start_scenario_run(stubs, PLAN_APPROVAL)
    agent = Agent(stubs, run.id)
    confirm = agent.ask(understudy_pb2.UI_KIND_CONFIRM, "Proceed?")
    assert (confirm.kind, confirm.confirmed, confirm.mocked) == (
        understudy_pb2.UI_KIND_CONFIRM, True, True)
    select = agent.ask(understudy_pb2.UI_KIND_SELECT, "Which?", items=["alpha", "beta", "gamma"])
    assert (select.kind, select.selected_index, select.selected, select.mocked) == (
        understudy_pb2.UI_KIND_SELECT, 1, "beta", True)
    typed = agent.ask(understudy_pb2.UI_KIND_INPUT, "When?", initial="monday")
    assert (typed.kind, typed.text, typed.mocked) == (
        understudy_pb2.UI_KIND_INPUT, "ship it friday", True)
    edited = agent.ask(understudy_pb2.UI_KIND_EDITOR, "Edit the plan", initial="draft")
    assert (edited.kind, edited.text, edited.mocked) == (
        understudy_pb2.UI_KIND_EDITOR, "edited by the mock", True)

    # mock_ui selects item 1: a list of one has none.
    past = rpc_error(agent.ask, understudy_pb2.UI_KIND_SELECT, "Which?", items=["only"])
    assert past.code() == grpc.StatusCode.INVALID_ARGUMENT
    no_items = rpc_error(agent.ask, understudy_pb2.UI_KIND_SELECT, "Which?")
    assert no_items.code() == grpc.StatusCode.INVALID_ARGUMENT
    no_kind = rpc_error(agent.ask, understudy_pb2.UI_KIND_UNSPECIFIED, "What?")
    assert no_kind.code() == grpc.StatusCode.INVALID_ARGUMENT

    calls = [e for e in query(stubs, run.id, ["ui_call"]) if "error.type" not in e.attributes]
    assert [e.attributes.get("understudy.ui.kind") for e in calls] == [
        "confirm", "select", "input", "editor"]
    assert [e.attributes.get("understudy.mocked") for e in calls] == ["true"] * 4
    assert [e.agent for e in calls] == [AGENT] * 4


def test_ui_ask_defaults_without_mock_ui(stubs):
    run = start_scenario_run(stubs, "schema: understudy.scenario/v1\nname: no-ui\n"
                                    "default: {respond: {content: ok}}\n")
    agent = Agent(stubs, run.id)
    assert agent.ask(understudy_pb2.UI_KIND_CONFIRM, "Proceed?").confirmed
    select = agent.ask(understudy_pb2.UI_KIND_SELECT, "Which?", items=["alpha", "beta"])
    assert (select.selected_index, select.selected) == (0, "alpha")
    assert agent.ask(understudy_pb2.UI_KIND_INPUT, "Name?", initial="x").text == ""
    assert agent.ask(understudy_pb2.UI_KIND_EDITOR, "Edit", initial="y").text == ""


def test_invalid_scenario_text_is_refused_with_the_validator_report(stubs):
    error = rpc_error(start_scenario_run, stubs, INVALID, run_id="bad-scenario")
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = error.details()
    assert ('inline:5:12: error: rules[0].when.agnet: unknown field (did you mean "agent"?)'
            in details), details
    assert 'inline:8:24: error: rules[1].error.grpc_code: unknown gRPC code "SLOW_DOWN"' in details
    # Nothing was started: the id is still free.
    run = start_scenario_run(stubs, PLAN_APPROVAL, run_id="bad-scenario")
    assert run.id == "bad-scenario"


def test_start_run_refuses_two_scenarios_and_replay_without_either(stubs):
    both = rpc_error(start_scenario_run, stubs, PLAN_APPROVAL, scenario="rate-limit")
    assert both.code() == grpc.StatusCode.INVALID_ARGUMENT
    # Replay needs a session when there is no scenario to answer.
    neither = rpc_error(start_scenario_run, stubs)
    assert neither.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_shipped_rate_limit_pack_by_name(stubs):
    """The pack's promise (docs/scenarios.md, scenarios/rate-limit.yaml): an
    agent that backs off and retries is refused twice with
    RESOURCE_EXHAUSTED, then answered; from its 5th call the quota is gone."""
    run = start_scenario_run(stubs, scenario="rate-limit")
    assert run.scenario == "rate-limit"
    assert run.session == ""
    request = completion_pb2.CompletionRequest(
        model="scripted-1", messages=[completion_pb2.Message(role="user", content="hello")])

    def call():
        return stubs.model.Complete(request, metadata=metadata(run.id, "retrier"),
                                    timeout=CALL_TIMEOUT)

    for attempt in (1, 2):
        error = rpc_error(call)
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, (attempt, error.details())
        assert "Rate limit reached" in error.details()
    assert call().message.content == "Answer after backing off."
    try:
        call()  # the 4th call: the pack says nothing about it
    except grpc.RpcError:
        pass
    quota = rpc_error(call)
    assert quota.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "exceeded your current quota" in quota.details()
    summary = end_run(stubs, run.id)
    assert summary.run.state == understudy_pb2.RUN_STATE_ENDED
    assert summary.run.scenario == "rate-limit"

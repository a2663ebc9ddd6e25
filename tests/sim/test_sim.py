"""`understudy sim` end to end: the real binary in panes of a real tmux server,
driven by tests/sim/orchestrator.py as an orchestrator drives Claude Code.

Every scenario runs REPEAT times (20 unless UNDERSTUDY_SIM_REPEAT says
otherwise), LANES repetitions at a time (3 unless UNDERSTUDY_SIM_LANES says
otherwise: agents of one orchestrator run side by side, and the suite stays
within its time), each with agents of its own, with zero delays
(UNDERSTUDY_SIM_DELAY=0); a failure names its repetition. The later scenarios
run SHORT times (5 unless UNDERSTUDY_SIM_REPEAT_SHORT says otherwise). Timings are
asserted only as generous bounds. Every wait has a deadline.
"""

import concurrent.futures
import functools
import inspect
import json
import os
import re
import subprocess
import time

import pytest

from conftest import BIN, HERE, HOOK, PANE_PATH, REPEAT, SIM, Spawner, pane_env, write_file
from orchestrator import Ipc, Orchestrator, Tmux, process_gone, processes_with_env, read_log

LANES = int(os.environ.get("UNDERSTUDY_SIM_LANES", "3"))
# Repetitions of the later scenarios (model-backed turns, raw bytes, Ctrl-D and
# Ctrl-C, queued prompts, two orchestrators), fewer to keep the suite within
# its time; UNDERSTUDY_SIM_REPEAT_SHORT=20 runs them as often as the others.
SHORT = int(os.environ.get("UNDERSTUDY_SIM_REPEAT_SHORT", "5"))
# A run scripted by its scenario alone (the sim makes no model calls here).
SCRIPTED = """\
schema: understudy.scenario/v1
name: scripted
default:
  respond: {content: "hello from understudy"}
"""
ALL_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]


def repeated(scenario=None, *, times=None):
    """The test runs scenario(**fixtures, rep=N) for N in range(REPEAT),
    LANES at a time; it fails with the first failed repetition's error (and
    how many failed). @repeated(times=N): N repetitions (at most REPEAT)."""
    if scenario is None:
        return functools.partial(repeated, times=times)
    count = REPEAT if times is None else min(times, REPEAT)
    params = [p for name, p in inspect.signature(scenario).parameters.items() if name != "rep"]

    @functools.wraps(scenario)
    def test(**fixtures):
        with concurrent.futures.ThreadPoolExecutor(LANES) as pool:
            runs = {pool.submit(scenario, rep=rep, **fixtures): rep for rep in range(count)}
            failed = sorted((runs[f], f.exception()) for f in concurrent.futures.as_completed(runs)
                            if f.exception() is not None)
        if failed:
            rep, error = failed[0]
            raise AssertionError(f"{len(failed)} of {count} repetitions failed "
                                 f"({[r for r, _ in failed]}); repetition {rep}: "
                                 f"{type(error).__name__}: {error}") from error

    test.__signature__ = inspect.Signature(params)
    del test.__wrapped__
    return test


def hooks_of(messages):
    return [m for m in messages if m.get("type") == "hook"]


def completions_of(messages):
    return [m for m in messages if m.get("type") == "completion"]


def wait_gone(pid, timeout):
    """Seconds until `pid` exited; AssertionError past `timeout`."""
    t0 = time.monotonic()
    while not process_gone(pid):
        assert time.monotonic() - t0 < timeout, f"process {pid} still runs after {timeout}s"
        time.sleep(0.005)
    return time.monotonic() - t0


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid} (gone)"


def wait_only(agent, pids, timeout):
    """Waits until the processes carrying the agent's AGENT_ID are `pids`
    (children exiting on their own take a moment); AssertionError past
    `timeout` naming the ones left."""
    deadline = time.monotonic() + timeout
    while True:
        found = processes_with_env("AGENT_ID", agent.id)
        if sorted(found) == sorted(pids):
            return
        assert time.monotonic() < deadline, (
            f"{agent}: processes {found} carry its AGENT_ID after {timeout}s (expected {pids}): "
            + "; ".join(cmdline(p) for p in found))
        time.sleep(0.01)


def wait_dead(orch, agent, timeout=5.0):
    """Waits until the agent's pane is dead (its process ended)."""
    deadline = time.monotonic() + timeout
    while not orch.orch.pane_state(agent)[0]:
        assert time.monotonic() < deadline, f"{agent} still runs after {timeout}s"
        time.sleep(0.005)


# --- the happy path -----------------------------------------------------------

@repeated
def test_happy_path_outputs_arrive_over_ipc(orch, rep):
    agent = orch.spawn("happy", workflow=f"wf-{rep}", step=f"step-{rep}")
    t0 = time.monotonic()
    screen = orch.orch.wait_prompt(agent)
    assert time.monotonic() - t0 < 3
    assert "Welcome to the simulated agent" in screen

    orch.orch.send_prompt(agent, "ship it please")
    done = orch.orch.next_message(agent, "completion")
    assert done["agent_id"] == agent.id
    assert done["workflow_id"] == f"wf-{rep}" and done["step_id"] == f"step-{rep}"
    assert done["args"] == ["done"]
    assert done["outputs"] == {"pr": "42", "status": "ok"}
    assert done["session_id"] and done["session_id"] in screen  # "{session_id}" in start-up

    screen = orch.orch.wait_prompt(agent, count=2)
    after = screen[screen.index("> ship it please"):]
    assert "Shipped." in after and after.rstrip().endswith(">"), screen
    log = read_log(agent)
    assert "state IDLE <- STARTING" in log and "state WORKING <- IDLE" in log, log
    assert log.index("state WORKING <- IDLE") < log.rindex("state IDLE <- WORKING"), log
    assert completions_of(orch.orch.messages(agent)) == [done]


# --- a long multi-line Unicode prompt with shell metacharacters -----------------

def big_prompt(rep):
    lines = [f"Task {rep}: réécris le module ✓ — 日本語のテキスト, emoji 🚀🧪, Ελληνικά",
             "shell: $(rm -rf /) `id` ; ls | wc & echo \"double\" 'single' \\ back\\slash $HOME",
             "tabs\tand  spaces   kept; percent %s %d {braces} [brackets] <angle> #hash ~tilde"]
    body = "\n".join(f"{i:03d} {lines[i % 3]}" for i in range(60))
    return body + "\nend of prompt ✓ $(`;|&\"'\\)"


@repeated
def test_multiline_unicode_prompt_over_4kb_arrives_intact(orch, settings, understudy_server, rep):
    text = big_prompt(rep)
    assert len(text.encode()) > 4096 and "\r" not in text
    client = understudy_server.client()
    run = client.open_run(scenario_text=SCRIPTED)
    try:
        path = settings("prompt", ["UserPromptSubmit"])
        agent = orch.spawn("unicode", args=["--settings", str(path), "--addr",
                                            understudy_server.address, "--run", run.id,
                                            "--agent", "coder"])
        orch.orch.wait_prompt(agent)
        orch.orch.send_prompt(agent, text)
        submitted = orch.orch.next_message(agent, "hook", "UserPromptSubmit")
        assert submitted["payload"]["prompt"] == text
        done = orch.orch.next_message(agent, "completion")
        assert done["outputs"] == {"status": "default"}

        event = run.wait_for(kinds="sim.prompt", agent="coder", timeout=5)
        assert event.attributes["understudy.sim.prompt"] == text
        assert event.attributes["understudy.sim.prompt.bytes"] == str(len(text.encode()))
        assert event.attributes["understudy.sim.behaviour"] == "default"
    finally:
        run.end()
        client.close()


# --- ask ------------------------------------------------------------------------

def events_of(messages):
    """Each message as "UserPromptSubmit:prompt", "Stop", "completion"."""
    out = []
    for m in messages:
        if m.get("type") != "hook":
            out.append(m.get("type"))
        elif "prompt" in m["payload"]:
            out.append(f"{m['event']}:{m['payload']['prompt']}")
        else:
            out.append(m["event"])
    return out


@repeated
def test_ask_answered_through_the_pane(orch, settings, rep):
    # An orchestrator that tracks "busy" from UserPromptSubmit and "idle" from
    # Stop sees every answer, a wrong one too, as work that ends in a Stop.
    path = settings("prompt-stop", ["UserPromptSubmit", "Stop"])
    agent = orch.spawn("ask", args=["--settings", str(path)])
    orch.orch.wait_prompt(agent)
    asked = orch.orch.turn(agent, "set up the database")
    assert events_of(asked) == ["UserPromptSubmit:set up the database", "Stop"], asked
    assert hooks_of(asked)[-1]["payload"]["stop_hook_active"] is False
    screen = orch.orch.wait_prompt(agent, count=2)
    question = screen[screen.index("Which database?"):]
    assert question.index("1. postgres") < question.index("2. sqlite"), screen

    # A wrong answer keeps the question open; the right one goes on.
    wrong = orch.orch.turn(agent, "mysql")
    assert events_of(wrong) == ["UserPromptSubmit:mysql", "Stop"], wrong
    orch.orch.wait_text(agent, "Please answer with 1-2")
    orch.orch.wait_prompt(agent, count=3)
    answer = "1" if rep % 2 else "  PostgreS "
    answered = orch.orch.turn(agent, answer)
    assert events_of(answered) == [f"UserPromptSubmit:{answer}", "completion", "Stop"], answered
    done = completions_of(answered)
    assert len(done) == 1 and done[0]["outputs"] == {"db": "postgres"}, answered
    orch.orch.wait_text(agent, "Using postgres.")
    orch.orch.wait_prompt(agent, count=4)


# --- fail_then_succeed and the orchestrator's retry -------------------------------

@repeated
def test_fail_then_succeed_with_the_orchestrators_retry(orch, settings, rep):
    agent = orch.spawn("flaky", args=["--settings", str(settings("stop", ["Stop"]))])
    orch.orch.wait_prompt(agent)
    attempts = []
    for attempt in range(1, 6):  # the orchestrator's retry policy: 5 attempts
        turn = orch.orch.turn(agent, f"flaky job attempt {attempt}")
        attempts.append(turn)
        if completions_of(turn):
            break
    assert len(attempts) == 3, [[m["type"] for m in t] for t in attempts]
    assert [len(completions_of(t)) for t in attempts] == [0, 0, 1]
    assert completions_of(attempts[2])[0]["outputs"] == {"status": "recovered"}
    screen = orch.orch.capture(agent, history=True)
    assert screen.count("Error: flaky failure") == 2, screen


# --- a hang, the orchestrator's timeout, the interrupt -----------------------------

@repeated
def test_hang_detected_by_timeout_then_interrupted(orch, settings, rep):
    agent = orch.spawn("hang", args=["--settings", str(settings("stop", ["Stop"]))])
    orch.orch.wait_prompt(agent)
    orch.orch.send_prompt(agent, "you will be stuck")
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        orch.orch.next_turn_end(agent, timeout=0.3)  # the orchestrator's step timeout
    assert time.monotonic() - t0 >= 0.29
    assert not orch.orch.pane_state(agent)[0], "a hang is not an exit"
    orch.orch.key(agent, "Escape" if rep % 2 == 0 else "C-c")
    orch.orch.wait_text(agent, "Interrupted by user")
    orch.orch.wait_prompt(agent, count=2)
    assert "state IDLE <- WORKING" in read_log(agent)

    # The agent works again.
    turn = orch.orch.turn(agent, "ship it now")
    assert completions_of(turn)[0]["outputs"] == {"pr": "42", "status": "ok"}


# --- a crash and a respawn with --resume ------------------------------------------

@repeated
def test_crash_then_respawn_with_resume(orch, settings, rep):
    path = settings("session", ["SessionStart", "Stop"])
    agent = orch.spawn("crash", args=["--settings", str(path)], keep_status=True)
    started = orch.orch.next_message(agent, "hook", "SessionStart")
    session = started["payload"]["session_id"]
    assert started["payload"]["source"] == "startup" and session
    orch.orch.wait_prompt(agent)
    orch.orch.send_prompt(agent, "boom goes the agent")
    assert orch.orch.exit_status(agent) == 3
    wait_dead(orch, agent)
    assert "state CRASHED <- WORKING" in read_log(agent)
    # The behaviour's output is on the pane before it dies.
    screen = orch.orch.capture(agent, history=True)
    assert turn_lines(screen, "> boom goes the agent")[:2] == [
        "> boom goes the agent", "Boom: the agent fell over."], screen
    assert not [m for m in orch.orch.messages(agent) if m.get("event") == "Stop"]

    orch.orch.respawn(agent, args=["--settings", str(path), "--resume", session])
    resumed = orch.orch.next_message(agent, "hook", "SessionStart")
    assert resumed["payload"]["source"] == "resume"
    assert resumed["payload"]["session_id"] == session
    screen = orch.orch.wait_prompt(agent)
    assert f"Resumed session {session}" in screen
    turn = orch.orch.turn(agent, "ship it after the crash")
    done = completions_of(turn)
    assert len(done) == 1 and done[0]["session_id"] == session


# --- an interrupt while a hook runs --------------------------------------------------

@repeated
def test_interrupt_during_a_hook_stops_the_turn_before_the_tool(orch, settings, workdir, rep):
    # The PreToolUse hook of Bash runs until the test lets it end; Escape (or
    # Ctrl-C) is typed meanwhile. It takes effect when the hook ends: the tool
    # never runs, no completion, no Stop; and a Ctrl-C is not left over for
    # the idle prompt, where a second one would end the agent.
    release = workdir / f"release-{rep}"
    release.unlink(missing_ok=True)
    held = {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{HOOK} wait {release}",
                                          "timeout": 30}]}
    path = settings(f"held-{rep}", ["UserPromptSubmit", "PostToolUse", "Stop"],
                    extra={"PreToolUse": [held]})
    agent = orch.spawn("hook-interrupt", args=["--settings", str(path)])
    orch.orch.wait_prompt(agent)
    orch.orch.send_prompt(agent, "use tools please")
    waiting = orch.orch.next_message(agent, "hook", "PreToolUse")
    assert waiting["mode"] == "wait" and waiting["payload"]["tool_name"] == "Bash"
    key = "Escape" if rep % 2 == 0 else "C-c"
    orch.orch.key(agent, key)
    wait_log(agent, "input_during_hook")  # the agent has the key; the hook still runs
    write_file(release, "go")
    orch.orch.wait_text(agent, "Interrupted by user")
    screen = orch.orch.wait_prompt(agent, count=2)
    assert turn_lines(screen, "> use tools please") == [
        "> use tools please", "  ⎿  Interrupted by user"], screen
    log = read_log(agent)
    assert "state IDLE <- WORKING (interrupted)" in log, log
    assert "Press Ctrl-C again" not in screen, screen

    # The agent works again, and nothing of the stopped turn came meanwhile.
    turn = orch.orch.turn(agent, "ship it now")
    assert completions_of(turn)[0]["outputs"] == {"pr": "42", "status": "ok"}
    assert events_of(orch.orch.messages(agent)) == [
        "UserPromptSubmit:use tools please", "PreToolUse", "UserPromptSubmit:ship it now",
        "completion", "Stop"]
    assert not orch.orch.pane_state(agent)[0]


# --- a completion command written as one line --------------------------------------------

@repeated
def test_completion_command_line_gets_its_outputs(orch, rep):
    agent = orch.spawn("line")
    orch.orch.wait_prompt(agent)
    orch.orch.send_prompt(agent, f"finish as one line {rep}")
    done = orch.orch.next_message(agent, "completion")
    assert done["args"] == ["done"], done
    assert done["outputs"] == {"k": "v w", "quote": "it's $HOME"}, done


# --- deterministic sessions --------------------------------------------------------------

@repeated
def test_deterministic_session_follows_the_config_not_its_folder(orch, sim_config, workdir,
                                                                 rep):
    # A harness writes each test's config into a fresh temporary folder; with
    # UNDERSTUDY_SIM_DETERMINISTIC=1 the panes print the same bytes.
    screens = []
    for side in ("a", "b"):
        folder = workdir / f"det-{rep}-{side}"
        folder.mkdir(exist_ok=True)
        config = folder / f"sim-{side}.yaml"
        write_file(config, sim_config.read_text())
        # MEOW's variable does the same (when UNDERSTUDY_SIM_DETERMINISTIC is unset).
        variable = "UNDERSTUDY_SIM_DETERMINISTIC" if rep % 2 == 0 else "MEOW_SIM_DETERMINISTIC"
        agent = orch.spawn("det", command=[SIM, "--config", str(config)],
                           env={variable: "1" if rep % 2 == 0 else "true"})
        screens.append(orch.orch.wait_prompt(agent))
    assert screens[0] == screens[1], screens
    assert "  session: " in screens[0], screens[0]


# --- a config in the MEOW orchestrator's dialect ------------------------------------

@repeated
def test_meow_dialect_config_drives_the_orchestrator(tmux, ipc, meow_config, settings, workdir,
                                                     rep):
    """The same orchestrator drives an agent whose config is written in MEOW's
    shape and given the MEOW way (MEOW_SIM_CONFIG, MEOW_SIM_DELAY,
    MEOW_SIM_LOG_LEVEL): hooks with Claude Code's payloads, `meow done` with
    the outputs, an ask answered, an interrupt during a hook, and a step that
    crashes the agent and succeeds once it is restarted with --resume."""
    release = workdir / f"meow-release-{rep}"
    release.unlink(missing_ok=True)
    held = {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{HOOK} wait {release}",
                                          "timeout": 30}]}
    path = settings(f"meow-{rep}", ALL_EVENTS, extra={"PreToolUse": [held]})
    # `meow` in PATH is tests/sim/meow (set through env: tmux gives a pane the
    # PATH of the client that made it, whatever -e says); the config comes from
    # MEOW_SIM_CONFIG.
    env = {"MEOW_SIM_CONFIG": str(meow_config), "UNDERSTUDY_SIM_DELAY": "", "MEOW_SIM_DELAY": "0",
           "MEOW_SIM_LOG_LEVEL": "debug"}
    command = ["/usr/bin/env", f"PATH={HERE}:{PANE_PATH}", SIM, "--dangerously-skip-permissions",
               "--settings", str(path)]
    orch = Spawner(Orchestrator(tmux, ipc, command, env=env, log_dir=str(workdir)))
    try:
        agent = orch.spawn("meow", keep_status=True)
        orch.orch.wait_prompt(agent)
        started = orch.orch.next_message(agent, "hook", "SessionStart")
        session = started["payload"]["session_id"]
        assert started["payload"]["permission_mode"] == "bypassPermissions"

        # complete, with its tool events as Claude Code's hooks.
        turn = orch.orch.turn(agent, "write the tests first")
        assert events_of(turn) == ["UserPromptSubmit:write the tests first", "PreToolUse",
                                   "PostToolUse", "completion", "Stop"], (turn, read_log(agent))
        pre, post, done = turn[1]["payload"], turn[2]["payload"], turn[3]
        assert pre["tool_name"] == "Write" and pre["tool_input"] == {
            "file_path": "src/feature.test.ts"}
        assert pre["tool_use_id"] == post["tool_use_id"] and pre["tool_use_id"].startswith(
            "toolu_sim_")
        assert post["tool_response"] == {"output": ""}
        assert done["args"] == ["done"]
        assert done["outputs"] == {"count": "3", "test_file": "src/feature.test.ts"}

        # ask: the options are shown, any answer is taken and passed on.
        asked = orch.orch.turn(agent, "implement the login feature")
        assert events_of(asked) == ["UserPromptSubmit:implement the login feature", "Stop"]
        screen = orch.orch.wait_prompt(agent, count=3)
        assert turn_lines(screen, "> implement the login feature")[1:] == [
            "Which approach?", "  1. fastest", "  2. simplest"], screen
        answered = orch.orch.turn(agent, "simplest, with tests")
        assert events_of(answered) == ["UserPromptSubmit:simplest, with tests", "completion",
                                       "Stop"], answered
        assert answered[1]["outputs"] == {"answer": "simplest, with tests"}

        # An interrupt while a PreToolUse hook runs: the tool never runs.
        orch.orch.send_prompt(agent, "deploy it")
        reported = orch.orch.next_message(agent, "hook", "PreToolUse")  # the "*" hook, then
        waiting = orch.orch.next_message(agent, "hook", "PreToolUse")   # Bash's, held
        assert (reported["mode"], waiting["mode"]) == ("report", "wait")
        orch.orch.key(agent, "Escape")
        wait_log(agent, "input_during_hook")  # (a debug line: MEOW_SIM_LOG_LEVEL=debug)
        write_file(release, "go")
        orch.orch.wait_text(agent, "Interrupted by user")
        screen = orch.orch.wait_prompt(agent, count=5)
        assert turn_lines(screen, "> deploy it") == ["> deploy it", "  ⎿  Interrupted by user"]

        # step-2 crashes the agent; restarted with --resume, it succeeds.
        before = len(orch.orch.messages(agent))
        orch.orch.send_prompt(agent, "run step-2")
        assert orch.orch.exit_status(agent) == 137
        wait_dead(orch, agent)
        assert [m for m in orch.orch.messages(agent)[before:]
                if m.get("type") == "completion"] == []
        orch.orch.respawn(agent, args=["--resume", session])
        resumed = orch.orch.next_message(agent, "hook", "SessionStart")
        assert resumed["payload"]["source"] == "resume"
        assert resumed["payload"]["session_id"] == session
        orch.orch.wait_prompt(agent)
        again = orch.orch.turn(agent, "run step-2")
        assert completions_of(again)[0]["outputs"] == {"result": "step2-done"}, again
        assert completions_of(again)[0]["session_id"] == session
    finally:
        orch.close()


# --- three agents in parallel, joined ------------------------------------------------

@repeated
def test_three_agents_in_parallel_joined(orch, rep):
    agents = [orch.spawn("par", workflow=f"wf-{rep}", step=f"step-{i}") for i in range(3)]
    for agent in agents:
        orch.orch.wait_prompt(agent)
    t0 = time.monotonic()
    for i, agent in enumerate(agents):
        orch.orch.send_prompt(agent, f"ship it, part {i}")
    joined = [orch.orch.next_message(agent, "completion") for agent in agents]
    assert time.monotonic() - t0 < 5
    assert [(m["agent_id"], m["workflow_id"], m["step_id"]) for m in joined] == [
        (a.id, f"wf-{rep}", f"step-{i}") for i, a in enumerate(agents)]
    assert all(m["outputs"] == {"pr": "42", "status": "ok"} for m in joined)
    assert len({m["session_id"] for m in joined}) == 3, "each agent has its own session"


# --- hooks: payloads and order, a blocking PreToolUse ---------------------------------

@repeated
def test_hooks_fire_in_order_with_payloads_and_a_block_stops_the_tool(orch, settings, workdir,
                                                                      rep):
    block = {"matcher": "Edit", "hooks": [{"type": "command",
                                           "command": f"{HOOK} block 'edits are frozen'"}]}
    path = settings("all", ALL_EVENTS, extra={"PreToolUse": [block]})
    agent = orch.spawn("hooks", args=["--settings", str(path)])
    orch.orch.wait_prompt(agent)
    turn = orch.orch.turn(agent, "use tools please")
    messages = orch.orch.messages(agent)
    hooks = hooks_of(messages)
    names = [(h["event"], h["payload"].get("tool_name", ""), h["mode"]) for h in hooks]
    assert names[:2] == [("SessionStart", "", "report"), ("UserPromptSubmit", "", "report")], names
    assert names[-1] == ("Stop", "", "report"), names
    tools = names[2:-1]
    assert sorted(tools) == sorted([("PreToolUse", "Bash", "report"),
                                    ("PostToolUse", "Bash", "report"),
                                    ("PreToolUse", "Edit", "report"),
                                    ("PreToolUse", "Edit", "block")]), names
    assert tools.index(("PreToolUse", "Bash", "report")) < tools.index(
        ("PostToolUse", "Bash", "report"))
    assert tools.index(("PreToolUse", "Bash", "report")) < tools.index(
        ("PreToolUse", "Edit", "report")) < tools.index(("PreToolUse", "Edit", "block"))
    # The completion comes before the Stop hook.
    kinds = [m["type"] if m["type"] != "hook" else m["event"] for m in turn]
    assert kinds.index("completion") < kinds.index("Stop"), kinds

    by_event = {}
    for h in hooks:
        by_event.setdefault(h["event"], []).append(h["payload"])
    session = by_event["SessionStart"][0]["session_id"]
    for h in hooks:
        p = h["payload"]
        assert p["session_id"] == session and p["hook_event_name"] == h["event"], p
        assert p["cwd"] == str(workdir) and "transcript_path" in p, p
    assert by_event["SessionStart"][0]["source"] == "startup"
    assert by_event["UserPromptSubmit"][0]["prompt"] == "use tools please"
    bash = [p for p in by_event["PreToolUse"] if p["tool_name"] == "Bash"]
    assert bash == [dict(bash[0], tool_input={"command": "ls -la"})]
    edit = [p for p in by_event["PreToolUse"] if p["tool_name"] == "Edit"]
    assert edit[0]["tool_input"] == {"file_path": "a.txt"}
    post = by_event["PostToolUse"]
    assert [p["tool_name"] for p in post] == ["Bash"], "the blocked Edit never ran"
    assert "a.txt" in json.dumps(post[0]["tool_response"])
    assert by_event["Stop"][0]["stop_hook_active"] is False
    screen = orch.orch.wait_prompt(agent, count=2)
    assert "Blocked by hook: edits are frozen" in screen, screen


# --- the trace of a simulated run ------------------------------------------------------

@repeated
def test_trace_assertions_over_a_simulated_run(orch, understudy_server, rep):
    client = understudy_server.client()
    run = client.open_run(scenario_text=SCRIPTED)
    try:
        name = f"coder-{rep}"
        agent = orch.spawn("traced", args=["--addr", understudy_server.address,
                                           "--run", run.id, "--agent", name])
        orch.orch.wait_prompt(agent)
        idle = run.wait_for_state(name, "IDLE", timeout=5)
        assert idle.attributes["understudy.sim.state.from"] == "STARTING"
        orch.orch.send_prompt(agent, "use tools please")
        orch.orch.next_message(agent, "completion")
        first = run.wait_for_done(name, after_seq=idle.seq, timeout=5)
        assert first.attributes["understudy.sim.state"] == "IDLE"
        orch.orch.send_prompt(agent, "ship it")
        orch.orch.next_message(agent, "completion")
        second = run.wait_for_done(name, after_seq=first.seq, timeout=5)
        assert second.seq > first.seq

        run.assert_agent_sequence([name, name])
        run.assert_tool_calls([("Bash", {"command": "ls -la"}), ("Edit", {"file_path": "a.txt"})])
        run.assert_count("==", 2, kinds="sim.completion", agent=name,
                         attributes={"understudy.sim.outcome": "ok"})
        started = run.query(kinds="sim.started", agent=name)
        assert len(started) == 1 and started[0].attributes["understudy.sim.resumed"] == "false"
        assert started[0].attributes["understudy.sim.skip_permissions"] == "true"
        states = [(e.attributes["understudy.sim.state.from"], e.attributes["understudy.sim.state"])
                  for e in run.query(kinds="sim.state", agent=name)]
        assert states == [("", "STARTING"), ("STARTING", "IDLE"), ("IDLE", "WORKING"),
                          ("WORKING", "IDLE"), ("IDLE", "WORKING"), ("WORKING", "IDLE")] or \
            states[1:] == [("STARTING", "IDLE"), ("IDLE", "WORKING"), ("WORKING", "IDLE"),
                           ("IDLE", "WORKING"), ("WORKING", "IDLE")], states

        orch.orch.send_prompt(agent, "/exit")
        done = run.wait_for_state(name, "DONE", after_seq=second.seq, timeout=5)
        assert done.attributes["understudy.sim.state.from"] == "IDLE"
        wait_dead(orch, agent)
    finally:
        run.end()
        client.close()


# --- bad configs ------------------------------------------------------------------------

BAD_CONFIGS = [
    ("unknown-action.yaml", "behaviours:\n  - when: {contains: x}\n    action: compleet\n", 3,
     "compleet"),
    ("bad-duration.yaml", "behaviours:\n  - action: complete\n    delay: soon\n", 3, "delay"),
    ("misplaced.yaml", "name: x\nbehaviours:\n  - action: complete\n    question: why?\n", 4,
     "question"),
    ("bad-regex.yaml", "behaviours:\n  - when: {matches: \"(unclosed\"}\n    action: fail\n", 2,
     "matches"),
]


@repeated
def test_bad_configs_exit_2_naming_file_and_line(orch, workdir, rep):
    name, text, line, word = BAD_CONFIGS[rep % len(BAD_CONFIGS)]
    path = workdir / name
    write_file(path, text)
    agent = orch.spawn("bad", command=[SIM, "--config", str(path)], keep_status=True)
    assert orch.orch.exit_status(agent) == 2
    log = read_log(agent)
    assert f"{name}:{line}:" in log and word in log, log
    assert "> " not in orch.orch.capture(agent), "no prompt for a bad config"


# --- a missing completion command ------------------------------------------------------

@repeated
def test_missing_completion_command_gives_up_and_stays_usable(orch, rep):
    agent = orch.spawn("missing")
    orch.orch.wait_prompt(agent)
    orch.orch.send_prompt(agent, "no completion here")
    orch.orch.wait_text(agent, "Error: completion command failed:")
    orch.orch.wait_prompt(agent, count=2)
    orch.orch.send_prompt(agent, "ship it anyway")
    done = orch.orch.next_message(agent, "completion")
    assert done["outputs"] == {"pr": "42", "status": "ok"}
    assert completions_of(orch.orch.messages(agent)) == [done]


# --- a hook that hangs -----------------------------------------------------------------

@repeated
def test_a_hanging_hook_is_bounded_by_its_timeout(orch, workdir, rep):
    path = workdir / "hang.settings.json"
    write_file(path, json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": f"{HOOK} hang", "timeout": 0.3}]}]}}))
    agent = orch.spawn("hook-hang", args=["--settings", str(path)])
    orch.orch.wait_prompt(agent)
    t0 = time.monotonic()
    orch.orch.send_prompt(agent, "ship it past the hook")
    # Not the hook's own report: on a loaded machine the hook may be killed
    # at 0.3 s before its interpreter has even started. The log says the sim
    # waited out the timeout, and the turn went on.
    done = orch.orch.next_message(agent, "completion")
    elapsed = time.monotonic() - t0
    assert 0.25 <= elapsed < 5, elapsed
    assert done["outputs"] == {"pr": "42", "status": "ok"}
    log = read_log(agent)
    assert re.search(r"hook hook=UserPromptSubmit exit=-?\d+ outcome=timeout", log), log
    # The hook's process group was killed: only the agent has its AGENT_ID.
    wait_only(agent, [agent.pid], 2.0)


# --- a terminal closed under the agent -------------------------------------------------

def hook_running_settings(settings, workdir, name):
    """Settings whose UserPromptSubmit hook runs until the session ends (it
    waits for a file nobody writes)."""
    held = {"hooks": [{"type": "command", "command": f"{HOOK} wait {workdir}/never-written",
                       "timeout": 60}]}
    return settings(name, [], extra={"UserPromptSubmit": [held]})


@repeated
def test_terminal_closed_under_the_agent(orch, settings, workdir, rep):
    # At its prompt, working, or in a hook: gone within 1 s, no child left.
    mode = ("idle", "working", "hook")[rep % 3]
    path = hook_running_settings(settings, workdir, "held-forever")
    agent = orch.spawn("closed", args=["--settings", str(path)] if mode == "hook" else [])
    orch.orch.wait_prompt(agent)
    pid = int(orch.orch.tmux.run("display-message", "-p", "-t", agent.pane,
                                 "#{pane_pid}").strip())
    assert pid == agent.pid and not process_gone(pid)
    if mode == "working":
        orch.orch.send_prompt(agent, "stuck forever")
        orch.orch.wait_text(agent, "> stuck forever")
    elif mode == "hook":
        orch.orch.send_prompt(agent, "ship it past a hook that never ends")
        orch.orch.next_message(agent, "hook", "UserPromptSubmit")
    orch.orch.tmux.run("kill-pane", "-t", agent.pane)
    assert wait_gone(pid, 1.0) < 1.0
    wait_only(agent, [], 1.0)


@repeated
def test_tmux_server_killed_under_the_agent(sim_config, settings, workdir, ipc, rep):
    in_hook = rep % 2 == 1  # or at its prompt
    directory = workdir / f"kill-{rep}"
    directory.mkdir(exist_ok=True)
    private = Tmux(str(directory), pane_env())
    try:
        orch = Spawner(Orchestrator(private, ipc, [SIM, "--config", str(sim_config)],
                                    log_dir=str(directory)))
        path = hook_running_settings(settings, workdir, "held-forever")
        agent = orch.spawn("server-killed", args=["--settings", str(path)] if in_hook else [])
        orch.orch.wait_prompt(agent)
        if in_hook:
            orch.orch.send_prompt(agent, "ship it past a hook that never ends")
            orch.orch.next_message(agent, "hook", "UserPromptSubmit")
        pid = agent.pid
        private.kill()
        assert wait_gone(pid, 1.0) < 1.0
        wait_only(agent, [], 1.0)
    finally:
        private.kill()


# --- option-like text in prompts, `--` in the arguments -----------------------------------

@repeated
def test_option_like_prompts_and_double_dash(orch, settings, rep):
    path = settings("prompt", ["UserPromptSubmit"])
    first = "--looks-like-a-flag -p ship it"
    agent = orch.spawn("options", args=["--settings", str(path), "--model", "m1", "--frobnicate",
                                        "value-not-a-prompt", "--", first])
    submitted = orch.orch.next_message(agent, "hook", "UserPromptSubmit")
    assert submitted["payload"]["prompt"] == first
    done = orch.orch.next_message(agent, "completion")
    assert done["outputs"] == {"pr": "42", "status": "ok"}
    for text in ("--help", "-p --version -- ship it;", "-c"):
        orch.orch.send_prompt(agent, text)
        submitted = orch.orch.next_message(agent, "hook", "UserPromptSubmit")
        assert submitted["payload"]["prompt"] == text
        orch.orch.next_message(agent, "completion")
    prompts = [m["payload"]["prompt"] for m in hooks_of(orch.orch.messages(agent))]
    assert prompts == [first, "--help", "-p --version -- ship it;", "-c"], prompts
    assert not process_gone(agent.pid), "--help typed into the pane is a prompt, not a flag"
    assert "ignoring unknown flag --frobnicate" in read_log(agent)


def test_both_executables_print_the_same_version():
    lean = subprocess.run([SIM, "--version"], capture_output=True, text=True, timeout=10)
    big = subprocess.run([BIN, "sim", "--version"], capture_output=True, text=True, timeout=10,
                         env={k: v for k, v in os.environ.items()
                              if not k.startswith("UNDERSTUDY_")})
    assert lean.returncode == 0 and big.returncode == 0, (lean.stderr, big.stderr)
    assert lean.stdout == big.stdout and lean.stdout.strip()


def test_bad_flag_values_and_paths_are_usage_errors():
    """Exit 2 and one line naming what is wrong, before any terminal is touched."""
    cases = [
        (["--log-format", "xml"], "--log-format"),
        (["--settings", "/tmp"], "/tmp is a directory"),
        (["--log-file", "/tmp"], "cannot open log file /tmp"),
        (["--config", "/dev/null"], "not a regular file"),
    ]
    for args, message in cases:
        r = subprocess.run([SIM, *args], input="hi\n", capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and message in r.stderr, (args, r.returncode, r.stderr)
    r = subprocess.run([SIM], input="hi\n", capture_output=True, text=True, timeout=10,
                       env={**os.environ, "UNDERSTUDY_SIM_DELAY": "inf"})
    assert r.returncode == 2 and "UNDERSTUDY_SIM_DELAY: must be finite" in r.stderr, r.stderr


# --- helpers of the scenarios below ----------------------------------------------------

def turn_lines(screen, prompt_line):
    """The pane's lines of one turn: from `prompt_line` (the indicator and the
    prompt as echoed, "> ship it") up to the next indicator line, trailing
    spaces and blank lines dropped. ValueError when the line is not there."""
    lines = [line.rstrip() for line in screen.split("\n")]
    start = lines.index(prompt_line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(">")), len(lines))
    body = lines[start:end]
    while body and not body[-1]:
        body.pop()
    return body


def wait_log(agent, text, timeout=5.0):
    """Waits until the agent's log (its stderr) holds `text`."""
    deadline = time.monotonic() + timeout
    while text not in read_log(agent):
        assert time.monotonic() < deadline, (
            f"{agent}: {text!r} not in its log within {timeout}s:\n{read_log(agent)[-2000:]}")
        time.sleep(0.005)


def attrs(events, *names):
    """(attribute, ...) of each event, for exact comparisons of a trace."""
    return [tuple(e.attributes.get(n) for n in names) for e in events]


# --- a model-backed behaviour through a real server --------------------------------------

# The run's scenario answers the sim's agent, asking as model gpt-sim-test with
# the planner's system prompt, with two lines of text and a tool call; any
# other request of the run is a miss (replay, strict, no session, no default).
MODEL_SCENARIO = """\
schema: understudy.scenario/v1
name: sim-model-{rep}
rules:
  - name: plan
    when: {{agent: {agent}, model: gpt-sim-test, system_prompt: 'You are the planner',
            user_message: '^plan the work'}}
    respond:
      content: "Planning the work of repetition {rep}.\\nTwo steps."
      tool_calls:
        - name: Write
          arguments: {{file_path: plan-{rep}.md, content: "step 1"}}
"""


@repeated(times=SHORT)
def test_model_behaviour_answered_through_a_real_server(orch, model_config, understudy_server,
                                                        rep):
    client = understudy_server.client()
    name = f"thinker-{rep}"
    run = client.open_run(scenario_text=MODEL_SCENARIO.format(rep=rep, agent=name))
    try:
        agent = orch.spawn("model", command=[SIM, "--config", str(model_config)],
                           args=["--addr", understudy_server.address, "--run", run.id,
                                 "--agent", name])
        orch.orch.wait_prompt(agent)
        idle = run.wait_for_state(name, "IDLE", timeout=5)

        # The model's text, line by line, then its tool call run as a tool.
        prompt = f"plan the work of repetition {rep}"
        orch.orch.send_prompt(agent, prompt)
        planned = orch.orch.next_message(agent, "completion")
        assert planned["outputs"] == {"via": "model"}
        screen = orch.orch.wait_prompt(agent, count=2)
        assert turn_lines(screen, f"> {prompt}") == [
            f"> {prompt}", f"Planning the work of repetition {rep}.", "Two steps.",
            f"⏺ Write(plan-{rep}.md)", "  ⎿  ok"], screen
        first = run.wait_for_done(name, after_seq=idle.seq, timeout=5)
        assert first.attributes["understudy.sim.reason"] == "completed"

        exchanges = run.query(kinds="exchange", agent=name)
        assert attrs(exchanges, "understudy.rule.name", "understudy.answer.source",
                     "gen_ai.request.model") == [("plan", "rule", "gpt-sim-test")]
        prompts = run.query(kinds="sim.prompt", agent=name)
        assert attrs(prompts, "understudy.sim.prompt", "understudy.sim.model",
                     "understudy.sim.behaviour") == [(prompt, "true", "plan")]
        asked = run.query(kinds="tool_call", agent=name)  # the model's answer
        ran = run.query(kinds="sim.tool_call", agent=name)  # the sim running it
        assert len(asked) == 1 and len(ran) == 1, (asked, ran)
        assert ran[0].attributes["gen_ai.tool.name"] == "Write"
        assert json.loads(ran[0].attributes["gen_ai.tool.call.arguments"]) == {
            "file_path": f"plan-{rep}.md", "content": "step 1"}
        assert ran[0].attributes["gen_ai.tool.call.id"] == \
            asked[0].attributes["gen_ai.tool.call.id"] == "call_understudy-1_0"
        assert attrs(run.query(kinds="sim.tool_result", agent=name), "gen_ai.tool.name",
                     "gen_ai.tool.call.result", "understudy.sim.blocked") == [
            ("Write", "ok", "false")]
        # One turn of the agent: the exchange counts it, the model-backed
        # sim.prompt does not count it again.
        run.assert_agent_sequence([name])

        # A prompt the scenario does not answer: the miss is the turn's error ...
        unscripted = f"something unscripted {rep}"
        orch.orch.send_prompt(agent, unscripted)
        screen = orch.orch.wait_prompt(agent, count=3)
        error = (f"Error: model request to {understudy_server.address} failed: no rule, playbook "
                 f"action or default answers this request (agent \"{name}\"); the run replays "
                 f"no session")
        assert turn_lines(screen, f"> {unscripted}") == [f"> {unscripted}", error], screen
        second = run.wait_for_done(name, after_seq=first.seq, timeout=5)
        assert second.attributes["understudy.sim.reason"] == "failed"
        assert attrs(run.query(kinds="sim.error", agent=name), "understudy.sim.message") == [
            (error,)]
        assert len(run.query(kinds="miss", agent=name)) == 1

        # ... and the agent stays usable.
        again = f"plan the work again ({rep})"
        orch.orch.send_prompt(agent, again)
        replanned = orch.orch.next_message(agent, "completion")
        screen = orch.orch.wait_prompt(agent, count=4)
        assert turn_lines(screen, f"> {again}")[1:] == [
            f"Planning the work of repetition {rep}.", "Two steps.",
            f"⏺ Write(plan-{rep}.md)", "  ⎿  ok"], screen
        run.wait_for_done(name, after_seq=second.seq, timeout=5)
        assert completions_of(orch.orch.messages(agent)) == [planned, replanned]
        assert attrs(run.query(kinds="sim.prompt", agent=name), "understudy.sim.behaviour",
                     "understudy.sim.model") == [("plan", "true"), ("default", "true"),
                                                 ("plan", "true")]
        assert len(run.query(kinds="exchange", agent=name)) == 2
        assert len(run.query(kinds="sim.tool_call", agent=name)) == 2
        # Two answered turns; the missed one has no exchange, and its
        # model-backed prompt is not counted either.
        run.assert_agent_sequence([name, name])
        assert not process_gone(agent.pid)
    finally:
        run.end()
        client.close()


# --- invalid UTF-8 and control bytes typed into the pane ---------------------------------

@repeated(times=SHORT)
def test_invalid_utf8_and_control_bytes_typed_into_the_pane(orch, settings, understudy_server,
                                                           rep):
    client = understudy_server.client()
    run = client.open_run(scenario_text=SCRIPTED)
    try:
        name = f"bytes-{rep}"
        agent = orch.spawn("bytes", args=["--settings", str(settings("prompt", ["UserPromptSubmit"])),
                                          "--addr", understudy_server.address, "--run", run.id,
                                          "--agent", name])
        orch.orch.wait_prompt(agent)

        def hex_keys(*keys):  # raw bytes, as `send-keys -H` delivers them
            orch.orch.tmux.run("send-keys", "-t", agent.pane, "-H", *keys)

        orch.orch.type(agent, f"bad {rep} ")
        hex_keys("c3", "28")  # a lead byte without its continuation
        orch.orch.type(agent, " x")
        hex_keys("ff", "01", "07", "1f")  # never in UTF-8; three C0 controls (not text)
        orch.orch.type(agent, " é")
        hex_keys("e2", "82")  # a three-byte sequence cut short, right before Enter
        orch.orch.key(agent, "Enter")
        raw = f"bad {rep} ".encode() + b"\xc3\x28" + b" x" + b"\xff" + " é".encode() + b"\xe2\x82"
        # Each ill-formed byte becomes one U+FFFD (validation/utf8.h's rule;
        # Python's errors="replace" would make one of the cut-short "e2 82").
        text = f"bad {rep} \ufffd( x\ufffd é\ufffd\ufffd"

        submitted = orch.orch.next_message(agent, "hook", "UserPromptSubmit")
        assert submitted["payload"]["prompt"] == text
        done = orch.orch.next_message(agent, "completion")
        assert done["outputs"] == {"status": "default"}
        screen = orch.orch.wait_prompt(agent, count=2)
        assert turn_lines(screen, f"> {text}") == [f"> {text}"], screen
        event = run.wait_for(kinds="sim.prompt", agent=name, timeout=5)
        assert event.attributes["understudy.sim.prompt"] == text
        assert event.attributes["understudy.sim.prompt.bytes"] == str(len(raw))

        # Neither crashed nor hung: the next prompt works.
        orch.orch.send_prompt(agent, "ship it after the bad bytes")
        assert orch.orch.next_message(agent, "completion")["outputs"] == {"pr": "42",
                                                                          "status": "ok"}
        orch.orch.wait_prompt(agent, count=3)
        assert [m["payload"]["prompt"] for m in hooks_of(orch.orch.messages(agent))] == [
            text, "ship it after the bad bytes"]
        assert not orch.orch.pane_state(agent)[0]
    finally:
        run.end()
        client.close()


# --- Ctrl-D, Ctrl-C twice, Ctrl-C clearing the line -------------------------------------

@repeated(times=SHORT)
def test_ctrl_d_and_ctrl_c_twice_end_the_agent_and_ctrl_c_clears_the_line(orch, settings, rep):
    path = settings("prompt", ["UserPromptSubmit"])
    quitter = orch.spawn("ctrl-d", args=["--settings", str(path)], keep_status=True)
    twice = orch.spawn("ctrl-c", args=["--settings", str(path)], keep_status=True)

    # Ctrl-C with text typed clears the line: Enter submits only what follows.
    orch.orch.wait_prompt(quitter)
    orch.orch.type(quitter, f"abandoned text {rep}")
    orch.orch.key(quitter, "C-c")
    orch.orch.type(quitter, f"ship it {rep}")
    orch.orch.key(quitter, "Enter")
    submitted = orch.orch.next_message(quitter, "hook", "UserPromptSubmit")
    assert submitted["payload"]["prompt"] == f"ship it {rep}"
    assert orch.orch.next_message(quitter, "completion")["outputs"] == {"pr": "42",
                                                                        "status": "ok"}
    screen = orch.orch.wait_prompt(quitter, count=3)
    assert turn_lines(screen, f"> abandoned text {rep}") == [f"> abandoned text {rep}"], screen
    assert turn_lines(screen, f"> ship it {rep}") == [f"> ship it {rep}", "Shipped."], screen
    # Ctrl-D at the empty prompt: Bye, exit 0.
    orch.orch.key(quitter, "C-d")
    assert orch.orch.exit_status(quitter) == 0
    assert "Bye." in orch.orch.capture(quitter, history=True).split("\n")
    assert "state DONE <- IDLE (end of input (Ctrl-D))" in read_log(quitter)
    assert len(hooks_of(orch.orch.messages(quitter))) == 1

    # Ctrl-C twice within a second at the empty prompt: Bye, exit 0.
    orch.orch.wait_prompt(twice)
    orch.orch.key(twice, "C-c")
    orch.orch.key(twice, "C-c")
    assert orch.orch.exit_status(twice) == 0
    screen = orch.orch.capture(twice, history=True)
    lines = [line.rstrip() for line in screen.split("\n")]
    assert lines.index("Press Ctrl-C again to exit") < lines.index("Bye."), screen
    assert "state DONE <- IDLE (Ctrl-C twice)" in read_log(twice)
    assert orch.orch.messages(twice) == []


# --- prompts queued while the agent works ------------------------------------------------

@repeated(times=SHORT)  # waits out a real 1.5 s delay
def test_prompts_queued_while_the_agent_works_run_in_order(orch, queue_config, rep):
    # UNDERSTUDY_SIM_DELAY empty: the config's delays, not the suite's zero.
    agent = orch.spawn("queue", command=[SIM, "--config", str(queue_config)],
                       env={"UNDERSTUDY_SIM_DELAY": ""})
    orch.orch.wait_prompt(agent)
    t0 = time.monotonic()
    orch.orch.send_prompt(agent, f"slow job {rep}")
    wait_log(agent, "state WORKING <- IDLE")
    # Both typed and submitted in one tmux call (commands joined by ";"), so
    # that a loaded machine (a sanitizer build) still types them well within the 1.5 s.
    keys = []
    for text in (f"second job {rep}", f"third job {rep}"):
        keys += ["send-keys", "-t", agent.pane, "-l", "--", text, ";",
                 "send-keys", "-t", agent.pane, "Enter", ";"]
    orch.orch.tmux.run(*keys[:-1])
    typed = time.monotonic()
    turns = [orch.orch.next_message(agent, "completion") for _ in range(3)]
    assert [m["outputs"] for m in turns] == [{"n": "first"}, {"n": "second"}, {"n": "third"}]
    assert turns[0]["received"] - t0 >= 1.45, "the slow job's delay was waited"
    assert typed < turns[0]["received"], "both were typed while the slow job worked"
    log = read_log(agent)
    first_end = log.index("state IDLE <- WORKING (completed)")
    assert log.index("prompt_queued bytes=") < log.index("queued=2") < first_end, log
    screen = orch.orch.wait_prompt(agent, count=4)
    assert [turn_lines(screen, f"> {what} job {rep}") for what in ("slow", "second", "third")] == [
        [f"> slow job {rep}", "Slow done."], [f"> second job {rep}", "Second done."],
        [f"> third job {rep}", "Third done."]], screen
    assert completions_of(orch.orch.messages(agent)) == turns


# --- two orchestrators side by side --------------------------------------------------------

@repeated(times=SHORT)
def test_two_orchestrators_side_by_side_each_get_only_their_own(sim_config, workdir, rep):
    """Two tmux servers (two sockets), two IPC sockets, one agent each, both
    named "twin", at the same time."""
    sides = []
    try:
        for side in ("a", "b"):
            directory = workdir / f"side-{side}-{rep}"
            directory.mkdir(exist_ok=True)
            server = Tmux(str(directory), pane_env())
            sides.append({"tmux": server})
            ipc = Ipc(str(directory / "orch.sock"))
            sides[-1]["ipc"] = ipc
            sides[-1]["orch"] = Orchestrator(server, ipc, [SIM, "--config", str(sim_config)],
                                             log_dir=str(directory))
        for side, s in zip("ab", sides):
            s["agent"] = s["orch"].spawn("twin", workflow=f"wf-{side}-{rep}", step=f"step-{side}")
        for s in sides:
            s["orch"].wait_prompt(s["agent"])
        sides[0]["orch"].send_prompt(sides[0]["agent"], f"ship it, side a {rep}")
        sides[1]["orch"].send_prompt(sides[1]["agent"], f"use tools, side b {rep}")
        done = [s["orch"].next_message(s["agent"], "completion") for s in sides]
        assert [(m["agent_id"], m["workflow_id"], m["step_id"], m["outputs"]) for m in done] == [
            ("twin", f"wf-a-{rep}", "step-a", {"pr": "42", "status": "ok"}),
            ("twin", f"wf-b-{rep}", "step-b", {"status": "tools"})]
        assert done[0]["session_id"] != done[1]["session_id"]
        # Both end; then nothing more can come, and each got its own only.
        for s in sides:
            s["orch"].send_prompt(s["agent"], "/exit")
        for s in sides:
            deadline = time.monotonic() + 5
            while not s["orch"].pane_state(s["agent"])[0]:
                assert time.monotonic() < deadline, f"{s['agent']} still runs after 5s"
                time.sleep(0.005)
        for s, mine in zip(sides, done):
            assert s["ipc"].agent_ids() == ["twin"]
            assert s["ipc"].messages("twin") == [mine]
            windows = s["tmux"].run("list-windows", "-a", "-F", "#{window_name}").split()
            assert windows.count("twin") == 1, windows
    finally:
        for s in sides:
            s["tmux"].kill()
            if "ipc" in s:
                s["ipc"].close()

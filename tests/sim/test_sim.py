"""`understudy sim` end to end: the real binary in panes of a real tmux server,
driven by tests/sim/orchestrator.py as an orchestrator drives Claude Code.

Every scenario runs REPEAT times (20 unless UNDERSTUDY_SIM_REPEAT says
otherwise), LANES repetitions at a time (3 unless UNDERSTUDY_SIM_LANES says
otherwise: agents of one orchestrator run side by side, and the suite stays
within its time), each with agents of its own, with zero delays
(UNDERSTUDY_SIM_DELAY=0); a failure names its repetition. Timings are
asserted only as generous bounds. Every wait has a deadline.
"""

import concurrent.futures
import functools
import inspect
import json
import os
import subprocess
import time

import pytest

from conftest import BIN, HOOK, REPEAT, SIM, Spawner, pane_env
from orchestrator import Orchestrator, Tmux, process_gone, processes_with_env, read_log

LANES = int(os.environ.get("UNDERSTUDY_SIM_LANES", "3"))
# A run scripted by its scenario alone (the sim makes no model calls here).
SCRIPTED = """\
schema: understudy.scenario/v1
name: scripted
default:
  respond: {content: "hello from understudy"}
"""
ALL_EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]


def repeated(scenario):
    """The test runs scenario(**fixtures, rep=N) for N in range(REPEAT),
    LANES at a time; it fails with the first failed repetition's error (and
    how many failed)."""
    params = [p for name, p in inspect.signature(scenario).parameters.items() if name != "rep"]

    @functools.wraps(scenario)
    def test(**fixtures):
        with concurrent.futures.ThreadPoolExecutor(LANES) as pool:
            runs = {pool.submit(scenario, rep=rep, **fixtures): rep for rep in range(REPEAT)}
            failed = sorted((runs[f], f.exception()) for f in concurrent.futures.as_completed(runs)
                            if f.exception() is not None)
        if failed:
            rep, error = failed[0]
            raise AssertionError(f"{len(failed)} of {REPEAT} repetitions failed "
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

@repeated
def test_ask_answered_through_the_pane(orch, settings, rep):
    agent = orch.spawn("ask", args=["--settings", str(settings("stop", ["Stop"]))])
    orch.orch.wait_prompt(agent)
    asked = orch.orch.turn(agent, "set up the database")
    assert completions_of(asked) == []
    assert [h["event"] for h in hooks_of(asked)] == ["Stop"]
    assert hooks_of(asked)[0]["payload"]["stop_hook_active"] is False
    screen = orch.orch.wait_prompt(agent, count=2)
    question = screen[screen.index("Which database?"):]
    assert question.index("1. postgres") < question.index("2. sqlite"), screen

    # A wrong answer keeps the question open; the right one goes on.
    orch.orch.send_prompt(agent, "mysql")
    orch.orch.wait_text(agent, "Please answer with 1-2")
    orch.orch.wait_prompt(agent, count=3)
    answer = "1" if rep % 2 else "  PostgreS "
    answered = orch.orch.turn(agent, answer)
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
    path.write_text(text)
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
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": f"{HOOK} hang", "timeout": 0.3}]}]}}))
    agent = orch.spawn("hook-hang", args=["--settings", str(path)])
    orch.orch.wait_prompt(agent)
    t0 = time.monotonic()
    orch.orch.send_prompt(agent, "ship it past the hook")
    hung = orch.orch.next_message(agent, "hook", "UserPromptSubmit")
    assert hung["mode"] == "hang"
    done = orch.orch.next_message(agent, "completion")
    elapsed = time.monotonic() - t0
    assert 0.25 <= elapsed < 5, elapsed
    assert done["outputs"] == {"pr": "42", "status": "ok"}
    log = read_log(agent)
    assert "timeout" in log, log
    # The hook's process group was killed: only the agent has its AGENT_ID.
    wait_only(agent, [agent.pid], 2.0)


# --- a terminal closed under the agent -------------------------------------------------

@repeated
def test_terminal_closed_under_the_agent(orch, workdir, rep):
    working = rep % 2 == 1
    agent = orch.spawn("closed")
    orch.orch.wait_prompt(agent)
    pid = int(orch.orch.tmux.run("display-message", "-p", "-t", agent.pane,
                                 "#{pane_pid}").strip())
    assert pid == agent.pid and not process_gone(pid)
    if working:
        orch.orch.send_prompt(agent, "stuck forever")
        orch.orch.wait_text(agent, "> stuck forever")
    orch.orch.tmux.run("kill-pane", "-t", agent.pane)
    assert wait_gone(pid, 1.0) < 1.0
    wait_only(agent, [], 1.0)


@repeated
def test_tmux_server_killed_under_the_agent(sim_config, workdir, ipc, rep):
    directory = workdir / f"kill-{rep}"
    directory.mkdir(exist_ok=True)
    private = Tmux(str(directory), pane_env())
    try:
        orch = Spawner(Orchestrator(private, ipc, [SIM, "--config", str(sim_config)],
                                    log_dir=str(directory)))
        agent = orch.spawn("server-killed")
        orch.orch.wait_prompt(agent)
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

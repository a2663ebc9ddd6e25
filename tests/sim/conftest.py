"""Fixtures of the `understudy sim` end-to-end tests: a private tmux server,
the orchestrator's IPC socket, the sim's config and hooks settings, and (for
the trace tests) a real `understudy serve`.

Paths come from the environment (ctest sets them):
  UNDERSTUDY_SIM_BIN   the lean sim (default: <repo>/build/cli/understudy-sim)
  UNDERSTUDY_BIN       understudy itself (default: <repo>/build/cli/understudy)
  UNDERSTUDY_PY_STUBS  generated Python stubs (default: <repo>/build/python)
  UNDERSTUDY_SIM_REPEAT  how many times each scenario runs (default 20)
  UNDERSTUDY_SIM_REPEAT_SHORT  ... each of the later, costlier ones (default 5)

Scripts run inside panes and hooks use /usr/bin/python3 -S by absolute path
and the panes get an explicit PATH: the shell's `python3` may be another,
slower interpreter.
"""

import atexit
import itertools
import json
import os
import pathlib
import shlex
import shutil
import sys
import tempfile
import threading

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "clients" / "python"))
os.environ.setdefault("UNDERSTUDY_PY_STUBS", str(REPO / "build" / "python"))

from orchestrator import Ipc, Orchestrator, Tmux  # noqa: E402


def _sim_bin():
    given = os.environ.get("UNDERSTUDY_SIM_BIN")
    if given:
        return given
    return str(REPO / "build" / "cli" / "understudy-sim")


SIM = _sim_bin()
BIN = os.environ.get("UNDERSTUDY_BIN") or str(REPO / "build" / "cli" / "understudy")
REPEAT = int(os.environ.get("UNDERSTUDY_SIM_REPEAT", "20"))
PY = "/usr/bin/python3"
MEOW = [PY, "-S", str(HERE / "meow")]
HOOK = f"{PY} -S {HERE / 'hook'}"
# The panes' environment: nothing of the caller's UNDERSTUDY_* or MEOW_*
# settings, an explicit PATH, /bin/sh as tmux's shell, zero delays, and the
# sessions' saved state (fail_then_succeed counts) in a folder of the run's.
PANE_PATH = "/usr/local/bin:/usr/bin:/bin"
STATE_DIR = tempfile.mkdtemp(prefix="us-sim-state-", dir="/tmp")
atexit.register(shutil.rmtree, STATE_DIR, True)


def pane_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("UNDERSTUDY_", "TMUX", "CLAUDE", "MEOW_"))}
    env.update({"PATH": PANE_PATH, "SHELL": "/bin/sh", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                "TERM": "xterm-256color", "UNDERSTUDY_SIM_DELAY": "0",
                "UNDERSTUDY_SIM_STATE_DIR": STATE_DIR})
    return env


def config_yaml(meow):
    """The sim's script for most scenarios (docs/sim.md#config-reference)."""
    command = json.dumps(meow + ["done"])
    # The same command written as one line, as orchestrators' adapters do.
    line = json.dumps(" ".join(shlex.quote(word) for word in meow + ["done"]))
    return f"""\
schema: understudy.sim/v1
name: coder
startup:
  lines: ["Welcome to the simulated agent", "  session: {{session_id}}"]
  delay: 0
prompt: "> "
completion:
  command: {command}
  output_flag: --output
  on_failure: give_up
  timeout: 10s
behaviours:
  - name: happy
    when: {{contains: "ship it"}}
    action: complete
    output: ["Shipped."]
    outputs: {{status: ok, pr: "42"}}
  - name: tools
    when: {{contains: "use tools"}}
    action: complete
    output: ["Tools used."]
    outputs: {{status: tools}}
    events:
      - {{at: 0ms, tool: Bash, input: {{command: "ls -la"}}, result: "a.txt", duration: 0ms}}
      - {{at: 0ms, tool: Edit, input: {{file_path: "a.txt"}}, result: "edited", duration: 0ms}}
  - name: pick-db
    when: {{contains: "database"}}
    action: ask
    question: "Which database?"
    options:
      - {{answer: postgres, then: use-postgres}}
      - {{answer: sqlite, then: {{action: fail, message: "Error: sqlite refused"}}}}
  - name: use-postgres
    when: {{contains: "never typed: use-postgres"}}
    action: complete
    output: ["Using postgres."]
    outputs: {{db: postgres}}
  - name: flaky
    when: {{contains: "flaky"}}
    action: fail_then_succeed
    failures: 2
    message: "Error: flaky failure"
    outputs: {{status: recovered}}
  - name: stuck
    when: {{contains: "stuck"}}
    action: hang
  - name: boom
    when: {{contains: "boom"}}
    action: crash
    output: ["Boom: the agent fell over."]
    exit_code: 3
  - name: line
    when: {{contains: "as one line"}}
    action: complete
    outputs: {{k: "v w", quote: "it's $HOME"}}
    completion:
      command: {line}
  - name: nowhere
    when: {{contains: "no completion"}}
    action: complete
    completion:
      command: ["/nonexistent/meow-missing", "done"]
      on_failure: give_up
default:
  action: complete
  outputs: {{status: default}}
"""


def model_config_yaml(meow):
    """A model-backed agent: "plan the work" asks understudy's Model service
    as model gpt-sim-test with a system prompt; anything else asks it with
    the defaults (and a scenario answering only the first makes that a miss).
    Both complete through the completion command."""
    command = json.dumps(meow + ["done"])
    return f"""\
schema: understudy.sim/v1
name: thinker
startup: {{lines: ["Welcome to the model-backed agent"], delay: 0}}
completion: {{command: {command}, timeout: 10s}}
behaviours:
  - name: plan
    when: {{contains: "plan the work"}}
    action: model
    model: gpt-sim-test
    system_prompt: "You are the planner."
    outputs: {{via: model}}
default:
  action: model
  outputs: {{via: default-model}}
"""


def queue_config_yaml(meow):
    """Three behaviours telling their turns apart by their outputs: a slow
    one (1.5 s: run it without UNDERSTUDY_SIM_DELAY=0) and two quick ones."""
    command = json.dumps(meow + ["done"])
    return f"""\
schema: understudy.sim/v1
name: queue
startup: {{delay: 0}}
completion: {{command: {command}, timeout: 10s}}
behaviours:
  - {{name: slow, when: {{contains: "slow job"}}, delay: 1500ms, output: ["Slow done."], outputs: {{n: first}}}}
  - {{name: second, when: {{contains: "second job"}}, output: ["Second done."], outputs: {{n: second}}}}
  - {{name: third, when: {{contains: "third job"}}, output: ["Third done."], outputs: {{n: third}}}}
"""


def meow_config_yaml():
    """A config in the MEOW orchestrator's dialect (docs/sim.md#the-meow-dialect):
    its completion command is `meow done` found in PATH (tests/sim/meow, for
    panes whose PATH starts with tests/sim)."""
    return """\
# MEOW dialect
timing: {startup_delay: 0, default_work_delay: 0, prompt_delay: 0}
hooks: {fire_stop_hook: true, fire_tool_events: true}
behaviors:
  - match: "write the tests"
    action:
      type: complete
      outputs: {test_file: src/feature.test.ts, count: 3}
      events:
        - {type: tool-starting, data: {tool: Write, file_path: src/feature.test.ts}, when: before}
        - {type: tool-completed, data: {tool: Write}, when: after}
  - match: "implement.*feature"
    type: regex
    action: {type: ask, question: "Which approach?", options: [fastest, simplest]}
  - match: "step-2"
    action:
      type: fail_then_succeed
      fail_count: 1
      exit_code: 137
      success_outputs: {result: step2-done}
  - match: "deploy"
    action:
      type: complete
      outputs: {deployed: "yes"}
      events: [{type: tool-starting, data: {tool: Bash, command: make deploy}}]
default:
  action: {type: complete, outputs: {result: default}}
logging: {level: warn, format: text}
"""


def settings_json(events, extra=None):
    """A Claude Code settings file whose hooks report every `events` to the
    orchestrator; `extra` {event: [matcher entries]} is added after them."""
    hooks = {event: [{"matcher": "*" if event in ("PreToolUse", "PostToolUse") else "",
                      "hooks": [{"type": "command", "command": f"{HOOK} report"}]}]
             for event in events}
    for event, entries in (extra or {}).items():
        hooks.setdefault(event, []).extend(entries)
    return json.dumps({"hooks": hooks}, indent=2)


def write_file(path, text):
    """Writes `text` to `path` whole or not at all (a temporary file renamed
    over it): repetitions run side by side, and an agent starting in one must
    never read the file half written by another (write_text truncates first)."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@pytest.fixture(scope="session")
def workdir():
    """A short directory (Unix socket paths must stay under 108 bytes)."""
    path = tempfile.mkdtemp(prefix="us-sim-", dir="/tmp")
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def sim_config(workdir):
    if not os.access(SIM, os.X_OK):
        pytest.fail(f"the sim binary {SIM} is not there: build the understudy-sim target")
    path = workdir / "coder.yaml"
    path.write_text(config_yaml(MEOW))
    return path


@pytest.fixture(scope="session")
def model_config(workdir, sim_config):
    path = workdir / "thinker.yaml"
    path.write_text(model_config_yaml(MEOW))
    return path


@pytest.fixture(scope="session")
def queue_config(workdir, sim_config):
    path = workdir / "queue.yaml"
    path.write_text(queue_config_yaml(MEOW))
    return path


@pytest.fixture(scope="session")
def meow_config(workdir, sim_config):
    path = workdir / "meow-sim.yaml"
    path.write_text(meow_config_yaml())
    return path


@pytest.fixture(scope="session")
def settings(workdir):
    """settings(name, events, extra=None) -> path of a settings file."""
    def make(name, events, extra=None):
        path = workdir / f"{name}.settings.json"
        write_file(path, settings_json(events, extra))
        return path
    return make


@pytest.fixture(scope="session")
def tmux(workdir):
    """One private tmux server for the session; killed at the end."""
    server = Tmux(str(workdir), pane_env())
    yield server
    server.kill()


@pytest.fixture(scope="session")
def ipc(workdir):
    with Ipc(str(workdir / "orch.sock")) as server:
        yield server


class Spawner:
    """An Orchestrator plus the agents it spawned in this test, closed at
    teardown. Each agent id is unique in the session."""

    ids = itertools.count(1)  # next() is atomic: tests spawn from several threads

    def __init__(self, orch):
        self.orch = orch
        self.agents = []

    def spawn(self, prefix="agent", **kw):
        agent = self.orch.spawn(f"{prefix}-{next(Spawner.ids)}", **kw)
        self.agents.append(agent)
        return agent

    def close(self):
        for agent in self.agents:
            self.orch.close(agent)


@pytest.fixture
def orch(tmux, ipc, sim_config, workdir):
    """An orchestrator driving `understudy-sim --config coder.yaml
    --dangerously-skip-permissions` with no settings (the cwd has none)."""
    orchestrator = Orchestrator(
        tmux, ipc, [SIM, "--config", str(sim_config), "--dangerously-skip-permissions"],
        log_dir=str(workdir))
    spawner = Spawner(orchestrator)
    yield spawner
    spawner.close()


@pytest.fixture(scope="session")
def understudy_server(workdir):
    """`understudy serve` on 127.0.0.1:0 with a fresh database (for the trace
    tests), through the Python client's launcher."""
    from understudy_testing import Server
    server = Server.start(binary=BIN, db=str(workdir / "understudy.db"))
    yield server
    server.stop()

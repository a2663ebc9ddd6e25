"""A small orchestrator of terminal coding agents, written the way real ones
are, for the end-to-end tests of `understudy sim`:

  - each agent runs in a tmux pane of a private server (`tmux -S SOCK -f
    /dev/null`), spawned with its environment (`new-window -e K=V`) and its
    stderr to a log file;
  - the orchestrator waits for the prompt indicator by polling
    `capture-pane -p` (5 ms steps, bounded), types a prompt with
    `send-keys -l` and submits it with `send-keys Enter`;
  - agents report back over a Unix socket, one JSON object per line: the
    completion command (`meow`) and the hook commands (`hook`) both connect
    to $ORCH_SOCKET and say who they are with $AGENT_ID.

Every wait has a deadline; a wait that runs out raises TimeoutError naming
what was awaited and showing the pane, so a failure reads as a diagnosis.

    with Tmux(directory, env) as tmux, Ipc(directory + "/orch.sock") as ipc:
        orch = Orchestrator(tmux, ipc, [SIM, "--config", cfg], env)
        agent = orch.spawn("a1")
        orch.wait_prompt(agent)
        orch.send_prompt(agent, "deploy to prod")
        done = orch.next_message(agent, "completion")
"""

import json
import os
import shlex
import socket
import subprocess
import threading
import time

POLL = 0.005  # seconds between two looks at a pane
TMUX_CALL_TIMEOUT = 10  # seconds, for every tmux command
MAX_LINE = 1 << 22  # bytes of one IPC line


class Tmux:
    """A private tmux server: `tmux -S <directory>/sock -f /dev/null`, started
    with `env` as its (and so every pane's) environment, one detached session
    "base" holding the agents' windows. Dead panes stay (remain-on-exit) so
    their exit status can be read. kill() ends the server."""

    def __init__(self, directory, env, width=200, height=50):
        self.socket = os.path.join(directory, "sock")
        self.env = dict(env)
        self.run("new-session", "-d", "-s", "base", "-x", str(width), "-y", str(height),
                 "exec sleep 86400")
        self.run("set-option", "-g", "remain-on-exit", "on")
        self.run("set-option", "-g", "history-limit", "10000")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def run(self, *args, check=True):
        """Runs one tmux command; its stdout. RuntimeError when it fails."""
        proc = subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", *args],
                              stdin=subprocess.DEVNULL, capture_output=True, env=self.env,
                              timeout=TMUX_CALL_TIMEOUT)
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:3])}...: exit {proc.returncode}: "
                               f"{proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout.decode(errors="replace")

    def kill(self):
        self.run("kill-server", check=False)


def literal(text):
    """`text` as one `send-keys -l` argument. tmux ends a command at an
    argument that ends with ";" (its command separator) unless the ";" is
    escaped as "\\;" — measured with tmux 3.3a: `send-keys -l 'a;'` types
    "a" — so a final ";" gets a backslash, which tmux removes."""
    return text[:-1] + "\\;" if text.endswith(";") else text


class Ipc:
    """The orchestrator's end of the single-line-JSON IPC: a Unix socket
    server; every line received is parsed and filed under its "agent_id".
    A line that is not a JSON object is filed under "" as {"type": "bad",
    "raw": ...}, so a test can see it.

    A sender writes its lines, shuts down its writing side and waits for
    the answer "ok\n", which comes once its lines are filed: a hook or
    completion command exits only after its message is filed, so messages
    are filed in the order the agent ran the commands that sent them.
    (Connections are served each on its own thread: without the answer, a
    second hook's message could be filed before the first's.)"""

    def __init__(self, path):
        self.path = path
        self._cond = threading.Condition()
        self._messages = {}  # agent id -> [message]
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._closed = True
        try:  # a connection wakes the accept() at once, to see it is closed
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as wake:
                wake.settimeout(1)
                wake.connect(self.path)
        except OSError:
            pass
        self._thread.join(timeout=5)
        self._sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _accept(self):
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        data = b""
        conn.settimeout(10)
        with conn:
            while len(data) < MAX_LINE:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    break
                if not chunk:
                    break
                data += chunk
            for line in data.split(b"\n"):
                if line.strip():
                    self._file(line)
            try:
                conn.sendall(b"ok\n")
            except OSError:
                pass  # a sender that did not wait for the answer

    def _file(self, line):
        try:
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("not an object")
        except ValueError:
            message = {"type": "bad", "raw": line.decode(errors="replace")}
        message["received"] = time.monotonic()
        with self._cond:
            self._messages.setdefault(message.get("agent_id", ""), []).append(message)
            self._cond.notify_all()

    def messages(self, agent_id):
        with self._cond:
            return list(self._messages.get(agent_id, []))

    def agent_ids(self):
        """The agent ids messages were received from ("" for bad lines)."""
        with self._cond:
            return sorted(self._messages)

    def wait(self, agent_id, index, accept, timeout):
        """The first message of `agent_id` at position >= index that
        accept(message) takes, and its position; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                got = self._messages.get(agent_id, [])
                for i in range(index, len(got)):
                    if accept(got[i]):
                        return got[i], i
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"agent {agent_id}: no such message within {timeout}s; it sent "
                        f"{[describe(m) for m in got[index:]]}")
                self._cond.wait(left)


def describe(message):
    """A short name of an IPC message for error messages: "hook:Stop"."""
    if message.get("type") == "hook":
        return f"hook:{message.get('event')}"
    return str(message.get("type"))


class Agent:
    """One spawned agent: its pane, the pane's process id (the agent itself:
    the pane runs `exec`), its log file and where its messages were read up
    to."""

    def __init__(self, agent_id, pane, pid, log, env):
        self.id = agent_id
        self.pane = pane
        self.pid = pid
        self.log = log
        self.env = env  # what the pane was given on top of the server's
        self.cursor = 0

    def __repr__(self):
        return f"Agent({self.id!r}, pane={self.pane}, pid={self.pid})"


class Orchestrator:
    """Spawns agents in panes of `tmux` and drives them. `command` is the
    agent's argv (e.g. [SIM, "--config", path]); `env` what every agent gets
    on top of the server's; each spawn adds AGENT_ID, WORKFLOW_ID, STEP_ID and
    ORCH_SOCKET. `indicator` is the agent's prompt indicator."""

    def __init__(self, tmux, ipc, command, env=None, indicator="> ", log_dir=None, cwd=None):
        self.tmux = tmux
        self.ipc = ipc
        self.command = list(command)
        self.env = dict(env or {})
        self.indicator = indicator.rstrip()
        self.log_dir = log_dir or os.path.dirname(ipc.path)
        self.cwd = cwd or self.log_dir

    # --- panes ----------------------------------------------------------

    def spawn(self, agent_id, args=(), env=None, workflow="wf-1", step="step-1", command=None,
              cwd=None, keep_status=False):
        """Starts the agent in a new window: `exec COMMAND ARGS 2>LOG`.
        keep_status: run it under the pane's shell instead and have the
        shell write its exit status to the file `agent.status` names (then
        the pane's pid is the shell's; read it with exit_status()) — tmux
        3.3a's #{pane_dead_status} is at times never filled in.
        Its working directory is `cwd` (default the orchestrator's). Returns
        the Agent (pane id and pid from `new-window -P`)."""
        log = os.path.join(self.log_dir, f"{agent_id}.log")
        variables = {**self.env, "AGENT_ID": agent_id, "WORKFLOW_ID": workflow,
                     "STEP_ID": step, "ORCH_SOCKET": self.ipc.path, **(env or {})}
        argv = list(command or self.command) + list(args)
        shell = " ".join(shlex.quote(a) for a in argv) + " 2>>" + shlex.quote(log)
        status = os.path.join(self.log_dir, f"{agent_id}.status") if keep_status else None
        if status:
            shell += f"; echo $? > {shlex.quote(status)}.tmp && mv {shlex.quote(status)}.tmp " \
                     f"{shlex.quote(status)}"
        else:
            shell = "exec " + shell
        out = self.tmux.run("new-window", "-d", "-t", "base", "-n", agent_id, "-c",
                            cwd or self.cwd, "-P", "-F",
                            "#{pane_id} #{pane_pid}", *env_flags(variables), shell).split()
        agent = Agent(agent_id, out[0], int(out[1]), log, variables)
        agent.status = status
        return agent

    def respawn(self, agent, args=()):
        """Runs the agent again in its (dead) pane: `respawn-pane -k`, new
        args, the same environment — given again: tmux keeps a window's
        `-e` variables for its first command only. The pane's pid changes."""
        argv = self.command + list(args)
        shell = "exec " + " ".join(shlex.quote(a) for a in argv) + " 2>>" + shlex.quote(agent.log)
        agent.status = None
        self.tmux.run("respawn-pane", "-k", "-t", agent.pane, *env_flags(agent.env), shell)
        agent.pid = int(self.tmux.run("display-message", "-p", "-t", agent.pane,
                                      "#{pane_pid}").strip())
        return agent

    def close(self, agent):
        self.tmux.run("kill-window", "-t", agent.pane, check=False)

    def capture(self, agent, history=False):
        """The pane's text, wrapped lines joined (-J); with history, from the
        start of its scrollback."""
        args = ["capture-pane", "-p", "-J", "-t", agent.pane]
        if history:
            args += ["-S", "-"]
        return self.tmux.run(*args)

    def pane_state(self, agent):
        """(dead, exit status) of the pane's process: (False, None) while it
        runs."""
        out = self.tmux.run("display-message", "-p", "-t", agent.pane,
                            "#{pane_dead} #{pane_dead_status} #{pane_dead_signal}").split()
        if out[0] != "1":
            return False, None
        return True, int(out[1]) if len(out) > 1 and out[1] else None

    def exit_status(self, agent, timeout=5.0):
        """The exit status of an agent spawned with keep_status, once it
        has exited; TimeoutError while it runs."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(agent.status) as f:
                    return int(f.read())
            except FileNotFoundError:
                pass
            if time.monotonic() >= deadline:
                raise TimeoutError(f"agent {agent.id}: still running after {timeout}s; the pane "
                                   f"shows:\n{self.capture(agent).rstrip()[-2000:]}")
            time.sleep(POLL)

    def _poll(self, what, agent, check, timeout):
        deadline = time.monotonic() + timeout
        while True:
            screen = self.capture(agent, history=True)
            result = check(screen)
            if result:
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(f"agent {agent.id}: {what} not seen within {timeout}s; "
                                   f"the pane shows:\n{screen.rstrip()[-3000:]}\n"
                                   f"--- log:\n{read_log(agent)[-2000:]}")
            time.sleep(POLL)

    def wait_prompt(self, agent, timeout=5.0, count=1):
        """Waits until the pane's last line is the bare prompt indicator and
        the pane has shown it at least `count` times (a new indicator after a
        turn, not the one seen before). Returns the pane's text."""
        def ready(screen):
            lines = [line.rstrip() for line in screen.rstrip("\n").split("\n")]
            while lines and not lines[-1]:
                lines.pop()
            if not lines or lines[-1] != self.indicator:
                return None
            shown = sum(1 for line in lines if line.startswith(self.indicator))
            return screen if shown >= count else None
        return self._poll(f"prompt indicator #{count}", agent, ready, timeout)

    def wait_text(self, agent, text, timeout=5.0):
        """Waits until `text` is on the pane (scrollback included)."""
        return self._poll(repr(text), agent, lambda screen: screen if text in screen else None,
                          timeout)

    def indicators(self, agent):
        """How many prompt lines the pane has shown."""
        screen = self.capture(agent, history=True)
        return sum(1 for line in screen.split("\n") if line.startswith(self.indicator))

    # --- input ----------------------------------------------------------

    def type(self, agent, text, chunk=1500):
        """Types `text` literally (newlines are newlines in the prompt), in
        chunks of `chunk` characters: tmux passes a command through a
        message of at most 16 KiB."""
        for i in range(0, len(text), chunk):
            self.tmux.run("send-keys", "-t", agent.pane, "-l", "--", literal(text[i:i + chunk]))

    def key(self, agent, name):
        """Sends one key by tmux's name: Enter, Escape, C-c, C-d."""
        self.tmux.run("send-keys", "-t", agent.pane, name)

    def send_prompt(self, agent, text):
        self.type(agent, text)
        self.key(agent, "Enter")

    # --- IPC ------------------------------------------------------------

    def next_message(self, agent, kind, event=None, timeout=5.0):
        """The agent's next IPC message of this type ("completion", "hook";
        for hooks, of this event). Reading advances past it, and past any
        other message before it (messages() keeps them all)."""
        def accept(m):
            return m.get("type") == kind and (event is None or m.get("event") == event)
        message, index = self._wait_message(agent, accept, timeout)
        agent.cursor = index + 1
        return message

    def _wait_message(self, agent, accept, timeout):
        """ipc.wait for `agent`; a TimeoutError also shows its pane and log,
        so that a wait that failed under load says where the agent was."""
        try:
            return self.ipc.wait(agent.id, agent.cursor, accept, timeout)
        except TimeoutError as e:
            raise TimeoutError(f"{e}; the pane shows:\n{self.capture(agent).rstrip()[-2000:]}\n"
                               f"--- log:\n{read_log(agent)[-3000:]}") from None

    def next_turn_end(self, agent, timeout=5.0):
        """The next sign that the agent's turn ended: a completion message or
        a Stop hook, whichever comes first."""
        def accept(m):
            return m.get("type") == "completion" or (m.get("type") == "hook"
                                                    and m.get("event") == "Stop")
        message, index = self._wait_message(agent, accept, timeout)
        agent.cursor = index + 1
        return message

    def turn(self, agent, prompt, timeout=5.0):
        """Submits `prompt` and returns the agent's messages up to and
        including the Stop hook that ends the turn (the agent must have a
        Stop hook reporting here)."""
        start = agent.cursor
        self.send_prompt(agent, prompt)
        self.next_message(agent, "hook", "Stop", timeout=timeout)
        return self.ipc.messages(agent.id)[start:agent.cursor]

    def messages(self, agent):
        return self.ipc.messages(agent.id)


def env_flags(variables):
    """`-e NAME=value` for each variable, for new-window and respawn-pane."""
    flags = []
    for key, value in variables.items():
        flags += ["-e", f"{key}={value}"]
    return flags


def read_log(agent):
    try:
        with open(agent.log, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def process_gone(pid):
    """True when `pid` has exited (gone, or a zombie its parent has not yet
    reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True


def processes_with_env(name, value):
    """Process ids of this user's processes whose environment has
    name=value (an agent's children carry its AGENT_ID)."""
    needle = f"{name}={value}".encode() + b"\0"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if environ.startswith(needle) or b"\0" + needle in environ:
            if not process_gone(int(entry)):
                found.append(int(entry))
    return found

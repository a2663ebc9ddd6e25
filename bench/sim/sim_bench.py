#!/usr/bin/python3
"""bench/sim/sim_bench.py: how fast `understudy sim` answers an orchestrator.

  start-up   exec of the simulator under a fresh pseudo-terminal until its
             prompt indicator ("> ") arrives on the terminal, with
             startup delay 0: the lean `understudy-sim` and `understudy sim`
             (the big binary), RUNS times each, alternating
  round trip a prompt typed into a tmux pane (`send-keys -l` + `send-keys
             Enter`, as orchestrators do) until the completion command's
             message arrives on the orchestrator's Unix socket, with zero
             delays (UNDERSTUDY_SIM_DELAY=0): TRIPS times, one at a time

Prints one RESULT line per figure (times in ms):
  RESULT label=startup-lean runs=30 median_ms=.. p90_ms=.. min_ms=.. max_ms=..
  RESULT label=startup-cli  ...
  RESULT label=roundtrip trips=100 p50_ms=.. p90_ms=.. p99_ms=.. min_ms=.. max_ms=..

Usage: sim_bench.py --sim BUILD/cli/understudy-sim --understudy BUILD/cli/understudy
                    [--runs 30] [--trips 100] [--warmup 3]
Needs tmux and /usr/bin/python3. Every wait is bounded (10 s); nothing is
left running (the tmux server is private and killed at the end).
"""

import argparse
import json
import os
import pathlib
import pty
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "sim"))
from orchestrator import Ipc, Orchestrator, Tmux  # noqa: E402

MEOW = ["/usr/bin/python3", "-S", str(HERE.parents[1] / "tests" / "sim" / "meow")]
WAIT = 10.0  # seconds, the bound of every wait
CSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")

CONFIG = """\
schema: understudy.sim/v1
name: bench
startup:
  lines: ["Welcome to the simulated agent"]
  delay: 0
prompt: "> "
completion:
  command: {command}
behaviours:
  - when: {{contains: "bench"}}
    action: complete
    outputs: {{status: ok}}
default: {{action: complete}}
"""


def env_for(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UNDERSTUDY_", "TMUX"))}
    env.update({"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                "UNDERSTUDY_SIM_DELAY": "0", "TERM": "xterm-256color", "SHELL": "/bin/sh"})
    env.update(extra or {})
    return env


def startup_once(argv, env):
    """Milliseconds from exec to the prompt indicator on the terminal."""
    master, slave = pty.openpty()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    seen = b""
    try:
        deadline = t0 + WAIT
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{argv[0]}: no prompt within {WAIT}s; it printed {seen!r}")
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                raise RuntimeError(f"{argv[0]}: exited before its prompt; it printed {seen!r}")
            seen += chunk
            text = CSI.sub(b"", seen)
            if text.endswith(b"> ") and (text == b"> " or b"\n> " in text):
                return (time.perf_counter() - t0) * 1000
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(master)


def figures(values, names):
    values = sorted(values)

    def pct(p):
        return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

    out = {}
    for name in names:
        if name == "median_ms" or name == "p50_ms":
            out[name] = statistics.median(values)
        elif name.startswith("p"):
            out[name] = pct(int(name[1:-3]))
        elif name == "min_ms":
            out[name] = values[0]
        elif name == "max_ms":
            out[name] = values[-1]
    return " ".join(f"{k}={v:.2f}" for k, v in out.items())


def bench_startup(args, config, env):
    commands = {"startup-lean": [args.sim, "--config", config],
                "startup-cli": [args.understudy, "sim", "--config", config]}
    times = {label: [] for label in commands}
    for _ in range(args.warmup):
        for argv in commands.values():
            startup_once(argv, env)
    for _ in range(args.runs):
        for label, argv in commands.items():  # alternating: both see the same machine
            times[label].append(startup_once(argv, env))
    for label, values in times.items():
        print(f"RESULT label={label} runs={len(values)} "
              f"{figures(values, ['median_ms', 'p90_ms', 'min_ms', 'max_ms'])}", flush=True)


def bench_roundtrip(args, config, directory):
    tmux = Tmux(directory, env_for())
    ipc = Ipc(os.path.join(directory, "orch.sock"))
    try:
        orch = Orchestrator(tmux, ipc, [args.sim, "--config", config], log_dir=directory)
        agent = orch.spawn("bench")
        orch.wait_prompt(agent, timeout=WAIT)
        times = []
        for i in range(args.warmup + args.trips):
            t0 = time.perf_counter()
            orch.send_prompt(agent, f"bench prompt {i}")
            message = orch.next_message(agent, "completion", timeout=WAIT)
            elapsed = (time.perf_counter() - t0) * 1000
            if message["outputs"] != {"status": "ok"}:
                raise RuntimeError(f"unexpected completion {json.dumps(message)}")
            if i >= args.warmup:
                times.append(elapsed)
            # The next prompt goes to an agent at its prompt again, as an
            # orchestrator's next step would.
            orch.wait_prompt(agent, timeout=WAIT, count=i + 2)
        print(f"RESULT label=roundtrip trips={len(times)} "
              f"{figures(times, ['p50_ms', 'p90_ms', 'p99_ms', 'min_ms', 'max_ms'])}", flush=True)
    finally:
        tmux.kill()
        ipc.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim", required=True, help="the understudy-sim executable")
    parser.add_argument("--understudy", required=True, help="the understudy executable")
    parser.add_argument("--runs", type=int, default=30, help="start-ups per executable")
    parser.add_argument("--trips", type=int, default=100, help="round trips through tmux")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured runs first")
    args = parser.parse_args()
    # The pane starts in another directory: paths must not be relative.
    args.sim, args.understudy = os.path.abspath(args.sim), os.path.abspath(args.understudy)
    with tempfile.TemporaryDirectory(prefix="us-simb-", dir="/tmp") as directory:
        config = os.path.join(directory, "bench.yaml")
        with open(config, "w") as f:
            f.write(CONFIG.format(command=json.dumps(MEOW)))
        bench_startup(args, config, env_for())
        bench_roundtrip(args, config, directory)


if __name__ == "__main__":
    main()

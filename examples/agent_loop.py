#!/usr/bin/python3
"""A tiny three-agent workflow that talks to understudy over gRPC.

orchestrator -> executor -> reviewer, twice: the reviewer's feedback from the
first round reaches the executor in the second. Run it against a server in
record mode to make a golden session, then in replay mode to get the same
answers back with no model at all.

  /usr/bin/python3 examples/agent_loop.py --addr 127.0.0.1:7140 --mode record --session golden
  /usr/bin/python3 examples/agent_loop.py --addr 127.0.0.1:7140 --mode replay --session golden

Needs the Python stubs that the build generates into build/python (or set
UNDERSTUDY_PY_STUBS to their folder).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("UNDERSTUDY_PY_STUBS", os.path.join(HERE, "..", "build", "python")))

import grpc  # noqa: E402
from understudy.v1 import completion_pb2, understudy_pb2, understudy_pb2_grpc  # noqa: E402

PROMPTS = {
    "orchestrator": "You are the orchestrator. Decide which agent works next.",
    "executor": "You are the executor. Write the code the task asks for.",
    "reviewer": "You are the reviewer. Find problems in the executor's work.",
}
TASK = "Add a function that parses a port number from a string."


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--addr", default="127.0.0.1:7140")
    parser.add_argument("--mode", choices=["record", "replay"], required=True)
    parser.add_argument("--session", default="golden")
    args = parser.parse_args()

    channel = grpc.insecure_channel(args.addr)
    runs = understudy_pb2_grpc.RunsStub(channel)
    model = understudy_pb2_grpc.ModelStub(channel)
    mode = understudy_pb2.RUN_MODE_RECORD if args.mode == "record" else understudy_pb2.RUN_MODE_REPLAY
    run = runs.StartRun(understudy_pb2.StartRunRequest(session=args.session, mode=mode))
    print(f"run {run.id} ({args.mode} {run.session}@{run.session_version})")

    transcript = []  # what every agent has said so far
    try:
        for round_ in range(2):
            for agent in ("orchestrator", "executor", "reviewer"):
                messages = [completion_pb2.Message(role="system", content=PROMPTS[agent]),
                            completion_pb2.Message(role="user", content=TASK)]
                messages += [completion_pb2.Message(role="user", content=f"{who}: {said}") for who, said in transcript]
                request = completion_pb2.CompletionRequest(model="demo-model", messages=messages)
                response = model.Complete(request, metadata=[("understudy-run", run.id), ("understudy-agent", agent)])
                said = response.message.content or " ".join(
                    f"{c.name}({c.arguments})" for c in response.message.tool_calls)
                transcript.append((agent, said))
                print(f"  {agent:12} {said[:90]}")
    except grpc.RpcError as e:
        print(f"model call failed: {e.code().name}: {e.details()}", file=sys.stderr)
    summary = runs.EndRun(understudy_pb2.EndRunRequest(run=run.id))
    print(f"served {summary.run.served}, recorded {summary.run.recorded}, "
          f"misses {summary.run.misses}, unused recordings {len(summary.unconsumed)}")
    return 1 if summary.run.misses else 0


if __name__ == "__main__":
    sys.exit(main())

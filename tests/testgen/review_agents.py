"""The system under test of the testgen tests: an orchestrator / executor /
reviewer loop that talks to a model over the OpenAI chat completions API at
$OPENAI_BASE_URL (standard library only), naming each agent in the
x-understudy-agent header. Recorded once from tests/fakes/fake_model, then
replayed by the generated tests.

    python3 review_agents.py              # the loop, until the reviewer approves
    python3 review_agents.py --skip-review   # drifted: never asks the reviewer

Exits 0 when the loop ends (1 when a model call fails), printing one line
per call.
"""

import json
import os
import sys
import urllib.error
import urllib.request

PROMPTS = {
    "orchestrator": "You are the orchestrator. Pick the next phase with continue.",
    "executor": "You are the executor. Write the code the task asks for.",
    "reviewer": "You are the reviewer. Approve the change or give FEEDBACK.",
}
TASK = "Write sum(a, b) in sum.py."


def ask(agent, transcript):
    messages = [{"role": "system", "content": PROMPTS[agent]}, {"role": "user", "content": TASK}]
    messages += [{"role": "user", "content": f"{who}: {said}"} for who, said in transcript]
    body = json.dumps({"model": "fake-model", "messages": messages}).encode()
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions", data=body,
        headers={"content-type": "application/json", "authorization": "Bearer unused",
                 "x-understudy-agent": agent})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)
    except urllib.error.HTTPError as e:
        sys.exit(f"{agent}: the model answered {e.code}: {e.read().decode(errors='replace')}")
    message = answer["choices"][0]["message"]
    calls = " ".join(f"{c['function']['name']}({c['function']['arguments']})"
                     for c in message.get("tool_calls") or [])
    said = f"{message.get('content') or ''} {calls}".strip()
    print(f"{agent}: {said}", flush=True)
    return said


def main(argv):
    skip_review = "--skip-review" in argv
    transcript = []
    for _ in range(3):
        for agent in ("orchestrator", "executor", "reviewer"):
            if agent == "reviewer" and skip_review:
                return 0
            transcript.append((agent, ask(agent, transcript)))
        if transcript[-1][1].startswith("APPROVED"):
            return 0
    print("the reviewer never approved", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

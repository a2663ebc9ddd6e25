"""The package's console script: asks the model at $OPENAI_BASE_URL, runs
the `get_weather` tool it asks for, and prints the model's final answer.
Exit 0 answered, 1 the model failed, 2 no answer after two steps.

    packaging-agent-py [--question TEXT]
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

from .tools import TOOLS, get_weather


def _complete(messages):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps({"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS}).encode(),
        headers={
            "content-type": "application/json",
            "authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "sk-placeholder"),
        },
    )
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.load(response)["choices"][0]["message"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="packaging-agent-py")
    parser.add_argument("--question", default="What is the weather in Paris?")
    question = parser.parse_args(argv).question
    messages = [
        {"role": "system", "content": "You answer with the tools you have."},
        {"role": "user", "content": question},
    ]
    try:
        for _ in range(2):
            message = _complete(messages)
            messages.append({k: v for k, v in message.items() if v is not None})
            calls = message.get("tool_calls") or []
            if not calls:
                print(message.get("content"))
                return 0
            for call in calls:
                result = get_weather(**json.loads(call["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    except (urllib.error.URLError, KeyError, ValueError) as e:
        print(f"packaging-agent-py: {e}", file=sys.stderr)
        return 1
    print("packaging-agent-py: no answer after two steps", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

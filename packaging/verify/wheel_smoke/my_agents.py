"""The agents of the README's pytest example, a stand-in for a user's:
orchestrator, executor and reviewer in a loop over the OpenAI Chat
Completions API (standard library only), each naming itself with the
X-Understudy-Agent header. run(openai_base_url) runs the loop until the
reviewer approves, at most three rounds; as a program it runs it against
$OPENAI_BASE_URL (what `understudy record -- python my_agents.py` sets).

script(request) is what a model answers these agents: the fake upstream
the recording is made from (record_golden.py).
"""

import json
import os
import urllib.request

PROMPTS = {
    "orchestrator": "You are the orchestrator. Pick the next phase with continue.",
    "executor": "You are the executor. Write the login query.",
    "reviewer": "You are the reviewer. Review the executor's query.",
}
TASK = "Write the login query."
CONTINUE = {"type": "function", "function": {
    "name": "continue", "description": "Go to the next phase",
    "parameters": {"type": "object", "properties": {"phase": {"type": "string"}}}}}


def ask(openai_base_url, agent, transcript):
    """One Chat Completions call of `agent`; what it said."""
    body = {"model": "gpt-4.1-mini",
            "messages": [{"role": "system", "content": PROMPTS[agent]},
                         {"role": "user", "content": TASK}]
            + [{"role": "user", "content": f"{who}: {said}"} for who, said in transcript]}
    if agent == "orchestrator":
        body["tools"] = [CONTINUE]
    request = urllib.request.Request(
        f"{openai_base_url}/chat/completions", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json",
                 "Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "unused"),
                 "X-Understudy-Agent": agent})
    with urllib.request.urlopen(request, timeout=30) as response:
        message = json.loads(response.read())["choices"][0]["message"]
    calls = " ".join(f"{c['function']['name']}({c['function']['arguments']})"
                     for c in message.get("tool_calls") or [])
    return f"{message.get('content') or ''} {calls}".strip()


def run(openai_base_url):
    """The loop; returns [(agent, said)]."""
    transcript = []
    for _ in range(3):
        for agent in ("orchestrator", "executor", "reviewer"):
            transcript.append((agent, ask(openai_base_url, agent, transcript)))
        if transcript[-1][1].startswith("APPROVED"):
            return transcript
    raise RuntimeError(f"the reviewer never approved: {transcript}")


def script(request):
    """A model's answer to one of these agents' requests (a Chat Completions
    response), a pure function of the request."""
    texts = [m.get("content") or "" for m in request["messages"]]
    agent = next(a for a, prompt in PROMPTS.items() if texts[0] == prompt)
    feedback = any("SQL injection" in t for t in texts)
    message = {"role": "assistant", "content": ""}
    if agent == "orchestrator":
        phase = "verification" if feedback else "execute"
        message["content"] = f"Routing to phase {phase}."
        message["tool_calls"] = [{"id": f"call_{phase}", "type": "function", "function": {
            "name": "continue", "arguments": json.dumps({"phase": phase})}}]
    elif agent == "executor":
        message["content"] = ("v2: a parameterized query" if feedback
                              else "v1: the query concatenates the user name")
    elif "v2" in texts[-1]:
        message["content"] = "APPROVED"
    else:
        message["content"] = "FEEDBACK: SQL injection in login()"
    return {"id": f"chatcmpl-{agent}-{len(texts)}", "object": "chat.completion",
            "created": 1700000000, "model": request["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


if __name__ == "__main__":
    for who, said in run(os.environ["OPENAI_BASE_URL"]):
        print(f"{who}: {said}")

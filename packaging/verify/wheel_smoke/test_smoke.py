"""The installed understudy_testing wheel, used as a user's project would use
it: copied into a sandbox by packaging/verify/wheel.sh and run there with
plain `pytest` (no -p: the fixtures come from the pytest11 entry point),
nothing of the repository on any path.

One chat completion from a fake OpenAI upstream (fake_openai.py: loopback,
port 0) is
recorded through the plugin's server, replayed with the upstream closed,
and the two answers must be the same bytes; then the replay's trace is
asserted on with the installed helpers. The server is $UNDERSTUDY_BIN.
"""

import json
import pathlib
import sys
import urllib.request

import pytest

import understudy_testing
from fake_openai import FakeOpenAI
from understudy_testing import assertions as A

SESSION = "wheel-smoke"
AGENT = "smoke-agent"
TIMEOUT = 10.0
REQUEST = {"model": "gpt-smoke", "messages": [{"role": "user", "content": "Say hello."}]}
ANSWER = {
    "id": "chatcmpl-smoke-1", "object": "chat.completion", "created": 1700000000,
    "model": "gpt-smoke",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "Hello from the fake upstream."}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
}


@pytest.fixture(scope="session")
def fake_openai():
    fake = FakeOpenAI(lambda request: ANSWER)
    fake.body = json.dumps(ANSWER).encode()  # the bytes it answers with
    yield fake
    fake.close()


@pytest.fixture(scope="session")
def understudy_server_args(fake_openai):
    """The plugin's server records from the fake."""
    return ("--upstream", f"openai={fake_openai.url}")


def chat(base_url):
    """The agent: one Chat Completions call; the answer's bytes."""
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=json.dumps(REQUEST).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": "Bearer unused",
                 "X-Understudy-Agent": AGENT})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        assert response.status == 200
        return response.read()


def test_the_package_is_the_installed_one():
    here = pathlib.Path(understudy_testing.__file__).resolve()
    assert pathlib.Path(sys.prefix).resolve() in here.parents, (
        f"understudy_testing was imported from {here}, not from the sandbox's venv {sys.prefix}")
    stubs = pathlib.Path(understudy_testing.understudy_pb2.__file__).resolve()
    assert here.parent in stubs.parents, (
        f"the stubs were imported from {stubs}, not from the installed package {here.parent}")


@pytest.mark.understudy(mode="record", session=SESSION)
def test_record_replay_assert(understudy_run, understudy_client, understudy_server, fake_openai):
    recorded = chat(understudy_run.openai_base_url)
    assert recorded == fake_openai.body
    assert fake_openai.calls == 1
    understudy_run.assert_agent_sequence([AGENT])
    understudy_run.end()

    fake_openai.close()  # the replay must not need it
    with understudy_client.open_run(mode="replay", session=SESSION,
                                    http=understudy_server.http) as replay:
        replayed = chat(replay.openai_base_url)
        assert replayed == recorded, "the replay's answer differs from the recorded bytes"
        replay.assert_agent_sequence([AGENT])
        replay.assert_no_misses()
        verdict = replay.check(A.count("==", 1, kinds=["exchange"], agent=AGENT),
                               A.no_misses())
        assert verdict.passed, verdict.report
    assert fake_openai.calls == 1

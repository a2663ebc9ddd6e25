"""Prometheus metrics: a real Prometheus (Debian's `prometheus`) scrapes two
understudy servers' GET /metrics, and a PromQL query through its HTTP API
sees every request each one answered, by API, mode and source; the access
token guards /metrics as it guards the APIs.
"""
import json
import pathlib
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from conftest import ServerProcess

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"

RULES = """\
schema: understudy.scenario/v1
name: metrics
rules:
  - name: answer-everything
    when: {message_contains: "."}
    respond: {content: "counted"}
"""


def _require_prometheus():
    if not pathlib.Path(PROMETHEUS).exists():
        pytest.fail("prometheus is not installed: run scripts/setup "
                    "(it runs `apt-get install prometheus`)")


def _post_chat(server, text, headers=None):
    body = json.dumps({"model": "gpt-4o-mini",
                       "messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(
        f"{server.http}/v1/chat/completions", data=body, method="POST",
        headers={"content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _get(url, headers=None, timeout=10):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.headers, response.read().decode()


def _free_port():
    # Prometheus takes no port 0 it would tell back: a port free a moment
    # ago. Its start fails loudly (and so does the test) should another
    # process take it in between.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _query(base, promql):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    _, _, text = _get(url)
    answer = json.loads(text)
    assert answer["status"] == "success", text
    return {tuple(sorted(r["metric"].items())): float(r["value"][1])
            for r in answer["data"]["result"]}


@pytest.fixture
def two_servers(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    servers = [ServerProcess(tmp_path / f"{name}.db", tmp_path / f"{name}.stderr",
                             extra=("--mode", "replay", "--scenario", str(rules)))
               for name in ("a", "b")]
    yield servers
    for server in servers:
        server.kill()


def test_prometheus_scrapes_two_servers_and_promql_sums_their_requests(two_servers, tmp_path):
    _require_prometheus()
    a, b = two_servers
    for i in range(3):
        assert _post_chat(a, f"question {i}.")["choices"][0]["message"]["content"] == "counted"
    for i in range(2):
        _post_chat(b, f"question {i}.")

    # Each server's own exposition, before Prometheus reads it.
    status, headers, text = _get(f"{a.http}/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4"), headers
    assert 'understudy_requests_total{api="openai",mode="replay",source="rule"} 3' in text, text
    assert 'understudy_request_duration_seconds_count{api="openai"} 3' in text, text
    assert "understudy_runs_active 1" in text, text

    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: understudy\n"
        "    static_configs:\n"
        f"      - targets: ['{a.http[len('http://'):]}', '{b.http[len('http://'):]}']\n")
    log = open(tmp_path / "prometheus.log", "wb")
    prom = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        # Both targets scraped at least once (bounded: 60 s).
        deadline = time.monotonic() + 60
        up = []
        while time.monotonic() < deadline:
            assert prom.poll() is None, (tmp_path / "prometheus.log").read_text()
            try:
                _, _, text = _get(f"{base}/api/v1/targets", timeout=2)
                targets = json.loads(text)["data"]["activeTargets"]
                up = [t for t in targets if t["health"] == "up"]
                if len(up) == 2:
                    break
            except (urllib.error.URLError, ConnectionError, KeyError):
                pass
            time.sleep(0.2)
        assert len(up) == 2, f"targets not up: {up}\n" + (tmp_path / "prometheus.log").read_text()

        by_instance = _query(
            base, 'sum by (instance) (understudy_requests_total{api="openai",source="rule"})')
        assert {dict(k)["instance"]: v for k, v in by_instance.items()} == {
            a.http[len("http://"):]: 3.0, b.http[len("http://"):]: 2.0}
        total = _query(base, 'sum(understudy_requests_total{mode="replay"})')
        assert list(total.values()) == [5.0]
        runs = _query(base, "sum(understudy_runs_active)")
        assert list(runs.values()) == [2.0]
        latency = _query(base, 'sum(understudy_request_duration_seconds_count{api="openai"})')
        assert list(latency.values()) == [5.0]
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=20)
        finally:
            if prom.poll() is None:
                prom.kill()
            log.close()


def test_metrics_are_behind_the_access_token(start_server, tmp_path):
    token = tmp_path / "token"
    token.write_text("metrics-token-0123456789abcdef\n")
    token.chmod(0o600)
    server = start_server(extra=("--auth-token-file", str(token)))
    with pytest.raises(urllib.error.HTTPError) as refused:
        _get(f"{server.http}/metrics")
    assert refused.value.code == 401
    status, _, text = _get(f"{server.http}/metrics",
                           headers={"authorization": "Bearer metrics-token-0123456789abcdef"})
    assert status == 200
    assert "# TYPE understudy_runs_active gauge" in text
    with pytest.raises(urllib.error.HTTPError) as wrong_method:
        urllib.request.urlopen(urllib.request.Request(
            f"{server.http}/metrics", data=b"", method="POST",
            headers={"authorization": "Bearer metrics-token-0123456789abcdef"}), timeout=10)
    assert wrong_method.value.code == 405

"""pytest fixtures for testing agents against understudy.

Installed from the wheel, pytest loads it by itself (the pytest11 entry
point `understudy_testing.pytest_plugin`). From a checkout, load it with
`pytest -p understudy_testing.pytest_plugin`, or in the top-level
conftest.py: `pytest_plugins = ["understudy_testing.pytest_plugin"]` (with
the wheel installed too, both find it loaded and do nothing more).

Fixtures:
  understudy_server       session: a server to talk to. Attaches to
                          $UNDERSTUDY_ADDR (and $UNDERSTUDY_HTTP for the HTTP
                          API) when set, as `understudy record|replay -- pytest`
                          sets them; else starts `understudy serve` with a
                          fresh database (binary: $UNDERSTUDY_BIN or PATH).
  understudy_server_args  session: extra `serve` arguments (default none);
                          override it, e.g. to pass --upstream.
  understudy_client       session: a Client for the server.
  understudy_run          function: a run for this test, started as the test's
                          `understudy` marker says and ended at teardown; a
                          RunHandle.

    @pytest.mark.understudy(mode="replay", session="golden")
    def test_review_loop(understudy_run):
        my_agent.run(base_url=understudy_run.openai_base_url)
        understudy_run.assert_agent_sequence(["orchestrator", "executor", "reviewer"])
"""

import os
import re
import secrets

import pytest

from .client import Client, RunHandle
from .server import Server

MARKER = ("understudy(mode='replay', session='', scenario='', scenario_text='', run_id='', "
          "strict=None, trace_level=None): how the understudy_run fixture starts this test's run")
_MARKER_KEYS = {"mode", "session", "scenario", "scenario_text", "run_id", "strict", "trace_level"}


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)


class AttachedServer:
    """A server this process did not start: $UNDERSTUDY_ADDR and
    $UNDERSTUDY_HTTP ("http://HOST:PORT", optional)."""

    def __init__(self, address, http=None):
        self.address = address
        self.http = http or None
        self.db = None

    def client(self, **kwargs):
        return Client(self.address, **kwargs)

    def stop(self):
        return None

    def __repr__(self):
        return f"AttachedServer(address={self.address!r}, http={self.http!r})"


@pytest.fixture(scope="session")
def understudy_server_args():
    """Extra arguments for `understudy serve`; override to add some."""
    return ()


@pytest.fixture(scope="session")
def understudy_server(request, tmp_path_factory):
    address = os.environ.get("UNDERSTUDY_ADDR")
    if address:
        yield AttachedServer(address, os.environ.get("UNDERSTUDY_HTTP"))
        return
    args = request.getfixturevalue("understudy_server_args")
    db = tmp_path_factory.mktemp("understudy") / "understudy.db"
    server = Server.start(db=db, extra_args=args)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def understudy_client(understudy_server):
    client = Client(understudy_server.address)
    try:
        yield client
    finally:
        client.close()


def _run_id(name):
    """A readable, unique run id: the test's name and a random suffix."""
    stem = re.sub(r"[^A-Za-z0-9_.:-]+", "-", name).strip("-")[:100] or "test"
    return f"{stem}-{secrets.token_hex(4)}"


@pytest.fixture
def understudy_run(request, understudy_server, understudy_client):
    marker = request.node.get_closest_marker("understudy")
    options = {}
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.understudy takes keywords only ({', '.join(sorted(_MARKER_KEYS))})")
        unknown = set(marker.kwargs) - _MARKER_KEYS
        if unknown:
            raise pytest.UsageError(
                f"@pytest.mark.understudy: unknown {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(_MARKER_KEYS))}")
        options.update(marker.kwargs)
    if not options.get("run_id"):
        options["run_id"] = _run_id(request.node.name)
    handle = RunHandle(understudy_client, understudy_client.start_run(**options),
                       http=understudy_server.http)
    where = f" --db {understudy_server.db}" if understudy_server.db else ""
    request.node.add_report_section(
        "setup", "understudy",
        f"run {handle.id} on {understudy_server.address}; its trace: "
        f"understudy trace {handle.id}{where}")
    try:
        yield handle
    finally:
        handle.end()

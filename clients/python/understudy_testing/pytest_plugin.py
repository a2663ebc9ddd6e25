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
                          sets them; else starts `understudy serve` (binary:
                          $UNDERSTUDY_BIN or PATH) on the recording
                          `understudy_db` names, which it only reads, or on a
                          fresh database.
  understudy_db           session: the recording the server replays from:
                          --understudy-db PATH, else the `understudy_db` ini
                          option (relative to the ini file), else None (a
                          fresh database). Override it to name one in code.
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

The marker takes StartRunRequest's fields by keyword, plus `session_file`:
a session exported with `understudy export` (JSONL; a path relative to the
test file's folder), imported into the server once and replayed by the run.
"""

import os
import pathlib
import re
import secrets
import threading

import grpc
import pytest

from ._stubs import understudy_pb2 as pb
from .client import Client, RunHandle, UnderstudyError
from .server import Server

# The marker's keywords: every field of StartRunRequest (Client.start_run
# takes the same), and session_file.
_START_RUN_KEYS = tuple(f.name for f in pb.StartRunRequest.DESCRIPTOR.fields)
_MARKER_KEYS = frozenset(_START_RUN_KEYS) | {"session_file"}
MARKER = ("understudy(mode='replay', session='', scenario='', scenario_text='', run_id='', "
          "strict=None, trace_level=None, repeat=False, session_file=None): how the "
          "understudy_run fixture starts this test's run (StartRunRequest's fields; "
          "session_file: an exported session to import and replay)")
DB_HELP = ("the recording (an understudy SQLite file) the plugin's server replays from; it is "
           "only read: runs and traces go to a copy")
# How to name a recording, for errors about a missing session.
NAMING = ("name the recording with --understudy-db PATH, the understudy_db ini option, an "
          "understudy_db fixture, or @pytest.mark.understudy(session_file=...)")


def pytest_addoption(parser):
    group = parser.getgroup("understudy")
    group.addoption("--understudy-db", dest="understudy_db", metavar="PATH", default=None,
                    help=DB_HELP)
    parser.addini("understudy_db", f"{DB_HELP} (relative to the ini file)", default="")


def pytest_configure(config):
    config.addinivalue_line("markers", MARKER)


class AttachedServer:
    """A server this process did not start: $UNDERSTUDY_ADDR and
    $UNDERSTUDY_HTTP ("http://HOST:PORT", optional)."""

    def __init__(self, address, http=None):
        self.address = address
        self.http = http or None
        self.db = None
        self.recording = None

    def client(self, **kwargs):
        return Client(self.address, **kwargs)

    def stop(self):
        return None

    def __repr__(self):
        return f"AttachedServer(address={self.address!r}, http={self.http!r})"


def _configured_db(config):
    """--understudy-db (relative to the invocation folder), else the ini
    option (relative to the ini file), else None."""
    given = config.getoption("understudy_db")
    if given:
        return (config.invocation_params.dir / given).resolve()
    value = config.getini("understudy_db")
    if value:
        base = config.inipath.parent if config.inipath else config.rootpath
        return (base / value).resolve()
    return None


@pytest.fixture(scope="session")
def understudy_db(request):
    """The recording the plugin's server replays from (a pathlib.Path), or
    None for a fresh, empty database."""
    return _configured_db(request.config)


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
    recording = request.getfixturevalue("understudy_db")
    folder = tmp_path_factory.mktemp("understudy")
    if recording is not None:
        recording = pathlib.Path(recording)
        if not recording.is_file():
            raise pytest.UsageError(f"understudy_db: no recording at {recording}")
        # The server replays a copy: the recording stays as committed.
        server = Server.start(db=recording, trace_db=folder / "understudy.db", extra_args=args)
    else:
        server = Server.start(db=folder / "understudy.db", extra_args=args)
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


class _SessionFiles:
    """Session files imported into the server, once each: path -> "NAME@N"."""

    def __init__(self):
        self._lock = threading.Lock()
        self._imported = {}

    def replayable(self, client, path):
        key = (os.fspath(path), path.stat().st_mtime_ns)
        with self._lock:
            if key not in self._imported:
                session = client.import_session(path)
                self._imported[key] = f"{session.name}@{session.version}"
            return self._imported[key]


@pytest.fixture(scope="session")
def _understudy_session_files():
    return _SessionFiles()


def _run_id(name):
    """A readable, unique run id: the test's name and a random suffix."""
    stem = re.sub(r"[^A-Za-z0-9_.:-]+", "-", name).strip("-")[:100] or "test"
    return f"{stem}-{secrets.token_hex(4)}"


def _marker_options(request):
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
    return options


@pytest.fixture
def understudy_run(request, understudy_server, understudy_client):
    options = _marker_options(request)
    session_file = options.pop("session_file", None)
    if session_file:
        path = pathlib.Path(request.node.path).parent / session_file
        if not path.is_file():
            raise pytest.UsageError(f"@pytest.mark.understudy(session_file=...): no file {path}")
        files = request.getfixturevalue("_understudy_session_files")
        imported = files.replayable(understudy_client, path)
        name = imported.split("@", 1)[0]
        if options.get("session") and options["session"].split("@", 1)[0] != name:
            raise pytest.UsageError(
                f"@pytest.mark.understudy: session={options['session']!r} but {path} holds "
                f"session {name!r}")
        options["session"] = imported
    if not options.get("run_id"):
        options["run_id"] = _run_id(request.node.name)
    try:
        run = understudy_client.start_run(**options)
    except UnderstudyError as e:
        # The server's message names the database it looked in; a fresh one
        # means no recording was named.
        fresh = (isinstance(understudy_server, Server)
                 and getattr(understudy_server, "recording", None) is None)
        if e.code != grpc.StatusCode.NOT_FOUND or not options.get("session") or not fresh:
            raise
        raise UnderstudyError(
            e.code, f"{e.message}; the plugin's server started on a fresh, empty database: {NAMING}",
            e.method) from None
    handle = RunHandle(understudy_client, run, http=understudy_server.http)
    where = f" --db {understudy_server.db}" if understudy_server.db else ""
    request.node.add_report_section(
        "setup", "understudy",
        f"run {handle.id} on {understudy_server.address}; its trace: "
        f"understudy trace {handle.id}{where}")
    try:
        yield handle
    finally:
        handle.end()

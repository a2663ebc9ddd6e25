"""A team's committed recording, replayed by pytest: the plugin named the
recording (--understudy-db, the understudy_db ini option or fixture, a
session file on the marker), `understudy replay --db golden.db -- pytest`,
and what neither may do: write into the recording, or print a summary of a
run nobody used. Also: every StartRunRequest field is reachable from the
client and the marker, and a failing helper points at the test's line.

The recording is made once per module from the fake upstream (conftest.py)
into its own file; each inner pytest runs in a subprocess (pytester) with
this checkout's package on PYTHONPATH, the way a user's project runs.
"""

import hashlib
import inspect
import os
import pathlib
import subprocess
import sys
import time

import pytest

import support
import understudy_testing
from understudy_testing import Client, Server, UnderstudyError
from understudy_testing import pytest_plugin
from understudy_testing import understudy_pb2 as pb

SESSION = "golden"
TESTS_DIR = pathlib.Path(support.__file__).resolve().parent
PACKAGE_DIR = pathlib.Path(understudy_testing.__file__).resolve().parents[1]
TIMEOUT = 120

# A user's test of the recorded loop, as the README writes one; `marker` is
# filled in per case.
INNER_TEST = '''
import os

import pytest

from support import run_agent_loop


@pytest.mark.understudy({marker})
def test_review_loop(understudy_run, understudy_client):
    transcript = run_agent_loop(understudy_client.model, understudy_run.id)
    assert [agent for agent, _ in transcript] == ["orchestrator", "executor", "reviewer"] * 2
    understudy_run.assert_agent_sequence(["orchestrator", "executor", "reviewer"], match="prefix")
    understudy_run.assert_tool_calls([("continue", {{"phase": "verification"}})], match="subsequence")
    understudy_run.assert_feedback_propagated("reviewer", "executor", "missing input validation")
    understudy_run.assert_no_misses()
    print("replayed run", understudy_run.id)
'''


def digest(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def recording(tmp_path_factory, fake_upstream):
    """golden.db with the three-agent loop recorded as SESSION, closed (the
    server stopped), and its export golden.jsonl."""
    folder = tmp_path_factory.mktemp("recording")
    db = folder / "golden.db"
    with Server.start(db=db, extra_args=("--upstream", fake_upstream.target)) as server:
        with server.client(timeout=10) as client:
            run = client.start_run(mode="record", session=SESSION)
            support.run_agent_loop(client.model, run.id)
            assert client.end_run(run.id).run.recorded == 6
            exported = client.sessions.ExportSession(pb.ExportSessionRequest(name=SESSION),
                                                     timeout=10)
    (folder / "golden.jsonl").write_bytes(exported.jsonl)
    return db


@pytest.fixture
def inner_env(monkeypatch):
    """The inner pytest finds this checkout's package and the tests' support
    module, and starts its own server (no UNDERSTUDY_ADDR)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(PACKAGE_DIR), str(TESTS_DIR), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.delenv("UNDERSTUDY_ADDR", raising=False)
    monkeypatch.delenv("UNDERSTUDY_HTTP", raising=False)


def run_inner(pytester, *args):
    return pytester.runpytest_subprocess("-p", "understudy_testing.pytest_plugin",
                                         "-p", "no:cacheprovider", "-q", "-s", *args,
                                         timeout=TIMEOUT)


# --- naming the recording (plain pytest) --------------------------------------

def test_the_command_line_option_names_the_recording_which_stays_as_it_was(
        pytester, inner_env, recording):
    before = digest(recording)
    beside = sorted(p.name for p in recording.parent.iterdir())
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=f'mode="replay", session="{SESSION}"'))
    result = run_inner(pytester, "--understudy-db", str(recording))
    result.assert_outcomes(passed=1)
    assert digest(recording) == before, "the replay wrote into the recording"
    assert sorted(p.name for p in recording.parent.iterdir()) == beside


def test_the_ini_option_names_the_recording_relative_to_the_ini_file(
        pytester, inner_env, recording):
    data = pytester.mkdir("data")
    (data / "golden.db").write_bytes(recording.read_bytes())
    pytester.makeini("[pytest]\nunderstudy_db = data/golden.db\n")
    tests = pytester.mkdir("tests")
    (tests / "test_loop.py").write_text(
        INNER_TEST.format(marker=f'mode="replay", session="{SESSION}"'))
    result = run_inner(pytester, "tests")
    result.assert_outcomes(passed=1)
    assert digest(data / "golden.db") == digest(recording)


def test_a_conftest_fixture_names_the_recording(pytester, inner_env, recording):
    pytester.makeconftest(f'''
import pathlib
import pytest

@pytest.fixture(scope="session")
def understudy_db():
    return pathlib.Path({str(recording)!r})
''')
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=f'mode="replay", session="{SESSION}"'))
    run_inner(pytester).assert_outcomes(passed=1)


def test_a_session_file_on_the_marker_is_imported_once_and_replayed(pytester, inner_env,
                                                                     recording):
    (pytester.path / "golden.jsonl").write_bytes((recording.parent / "golden.jsonl").read_bytes())
    marker = 'mode="replay", session_file="golden.jsonl"'
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=marker) + '''

@pytest.mark.understudy(session_file="golden.jsonl")
def test_again(understudy_run, understudy_client):
    from understudy_testing import understudy_pb2 as pb
    assert understudy_run.run.session == "golden"
    listed = understudy_client.sessions.ListSessions(pb.ListSessionsRequest(), timeout=10)
    assert [(s.name, s.version) for s in listed.sessions] == [("golden", 1)], "imported once"
''')
    run_inner(pytester).assert_outcomes(passed=2)


def test_without_a_recording_the_error_names_the_database_and_how_to_name_one(
        pytester, inner_env):
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=f'mode="replay", session="{SESSION}"'))
    result = run_inner(pytester)
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert 'StartRun: NOT_FOUND: session "golden" not found in database ' in output, output
    assert "understudy.db (which holds no sessions)" in output, output
    assert "the plugin's server started on a fresh, empty database" in output, output
    assert "--understudy-db PATH" in output and "understudy_db ini option" in output, output


def test_a_recording_without_the_session_names_what_it_holds(pytester, inner_env, recording):
    pytester.makepyfile(test_loop=INNER_TEST.format(marker='mode="replay", session="silver"'))
    result = run_inner(pytester, "--understudy-db", str(recording))
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert (f'session "silver" not found in database {recording} '
            f'(whose sessions are golden)') in output, output


def test_a_missing_recording_is_a_usage_error(pytester, inner_env, tmp_path):
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=f'session="{SESSION}"'))
    result = run_inner(pytester, "--understudy-db", str(tmp_path / "nope.db"))
    assert result.ret != 0
    assert f"understudy_db: no recording at {tmp_path / 'nope.db'}" in result.stderr.str() + \
        result.stdout.str()


# --- understudy replay --db golden.db -- pytest --------------------------------

def replay(recording, pytester, *extra):
    """`understudy replay --db RECORDING --session golden [extra] -- pytest ...`."""
    args = [os.environ["UNDERSTUDY_BIN"], "replay", "--db", str(recording), "--session", SESSION,
            *extra, "--", sys.executable, "-m", "pytest", "-p", "understudy_testing.pytest_plugin",
            "-p", "no:cacheprovider", "-q", "-s", "test_loop.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNDERSTUDY_")}
    env["PYTHONPATH"] = os.pathsep.join((str(PACKAGE_DIR), str(TESTS_DIR)))
    stubs = os.environ.get("UNDERSTUDY_PY_STUBS")
    if stubs:
        env["UNDERSTUDY_PY_STUBS"] = stubs
    return subprocess.run(args, cwd=pytester.path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)


def test_understudy_replay_leaves_the_recording_as_committed(pytester, recording):
    before = digest(recording)
    beside = sorted(p.name for p in recording.parent.iterdir())
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=f'mode="replay", session="{SESSION}"'))
    done = replay(recording, pytester)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout
    assert digest(recording) == before, "the replay wrote into the recording"
    assert sorted(p.name for p in recording.parent.iterdir()) == beside
    # The wrapper's own run was not used: no summary of it.
    assert "unused recordings" not in done.stderr, done.stderr
    assert "understudy: run " not in done.stderr, done.stderr


def test_understudy_replay_keeps_the_trace_in_trace_db(pytester, recording, tmp_path):
    before = digest(recording)
    trace_db = tmp_path / "replay.db"
    pytester.makepyfile(test_loop=INNER_TEST.format(marker=f'mode="replay", session="{SESSION}"'))
    done = replay(recording, pytester, "--trace-db", str(trace_db))
    assert done.returncode == 0, done.stdout + done.stderr
    assert digest(recording) == before
    run_id = next(line.split()[-1] for line in done.stdout.splitlines()
                  if line.startswith("replayed run "))
    trace = subprocess.run([os.environ["UNDERSTUDY_BIN"], "trace", run_id, "--db", str(trace_db)],
                           capture_output=True, text=True, timeout=TIMEOUT)
    assert trace.returncode == 0, trace.stderr
    assert trace.stdout.count("exchange") >= 6, trace.stdout
    # The recording holds no run of the replay.
    runs = subprocess.run([os.environ["UNDERSTUDY_BIN"], "runs", "ls", "--db", str(recording)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert run_id not in runs.stdout, runs.stdout


# --- every StartRun field, from the client and the marker ---------------------

START_RUN_FIELDS = [f.name for f in pb.StartRunRequest.DESCRIPTOR.fields]


def test_start_run_takes_every_start_run_request_field():
    keywords = [name for name, p in inspect.signature(Client.start_run).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert sorted(keywords) == sorted(START_RUN_FIELDS)
    assert set(START_RUN_FIELDS) <= pytest_plugin._MARKER_KEYS

    sent = []

    class Runs:
        def StartRun(self, request, timeout=None):
            sent.append(request)
            return pb.Run(id=request.run_id)

    client = Client("127.0.0.1:1")
    try:
        client.runs = Runs()
        client.start_run(mode="new", session="golden@2", strict=False, run_id="every-field",
                         scenario="rate-limit", scenario_text="schema: understudy.scenario/v1",
                         repeat=True, trace_level="summary")
    finally:
        client.close()
    (request,) = sent
    for field in START_RUN_FIELDS:
        assert request.HasField(field) if field == "strict" else getattr(request, field), field
    assert request.repeat is True and request.strict is False


@pytest.mark.understudy(scenario_text="schema: understudy.scenario/v1\nname: r\n", repeat=True)
def test_the_marker_takes_repeat(understudy_run):
    assert understudy_run.run.repeat is True


# --- failures that point at the test ------------------------------------------

def test_a_failed_helper_points_at_the_tests_line(pytester, inner_env):
    pytester.makepyfile(test_fail='''
import pytest

@pytest.mark.understudy(scenario_text="schema: understudy.scenario/v1\\nname: s\\n")
def test_expects_a_planner(understudy_run):
    understudy_run.assert_agent_sequence(["planner"])  # the line that failed
''')
    result = run_inner(pytester)
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "understudy_run.assert_agent_sequence([\"planner\"])  # the line that failed" in output
    assert "E       AssertionError: FAIL agent_sequence" in output, output
    assert "understudy_testing/client.py" not in output, output
    assert "def _require" not in output and "verdict = self.check" not in output, output


def test_a_server_that_exits_at_once_says_so(tmp_path):
    script = tmp_path / "fails.sh"
    script.write_text("#!/bin/sh\necho 'understudy: --db: cannot open' >&2\nexit 3\n")
    script.chmod(0o755)
    started = time.monotonic()
    with pytest.raises(RuntimeError) as failed:
        Server.start(binary=str(script), start_timeout=20)
    assert time.monotonic() - started < 10, "it waited for the start timeout"
    text = str(failed.value)
    assert "understudy serve exited with code 3 before its serving line" in text, text
    assert "printed no line" not in text, text
    assert "understudy: --db: cannot open" in text, text


def test_start_run_errors_are_understudy_errors_naming_the_database(understudy_client,
                                                                     understudy_server):
    with pytest.raises(UnderstudyError) as missing:
        understudy_client.start_run(session="no-such-session")
    assert f"not found in database {understudy_server.db}" in missing.value.message

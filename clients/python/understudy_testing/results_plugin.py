"""A pytest plugin that writes each test's result as JSON, for tools that
run tests and read their verdicts (understudy's run_tests).

    UNDERSTUDY_RESULTS_JSON=results.json pytest -p understudy_testing.results_plugin ...

Without UNDERSTUDY_RESULTS_JSON it does nothing. The file, written once
the session ends (through a temporary file and a rename):

    {"tests": [{"name": "test_x.py::test_y", "outcome": "passed" | "failed" |
                "error" | "skipped", "message": "...", "seconds": 0.12}],
     "exitstatus": 1}

A failure in setup or teardown (a fixture) is an "error"; a file that
cannot be collected is one "error" named after the file. "message" is the
exception as pytest prints it (for understudy's assertion helpers: the
server's report, one "FAIL name: explanation" line per failed check), or
"" for a passed test.
"""

import json
import os

ENV = "UNDERSTUDY_RESULTS_JSON"
_results = {}
_order = []


def _message(report):
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, str):
        return longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", ""):
        return crash.message
    return getattr(report, "longreprtext", "") or str(longrepr)


def _record(name, outcome, message, seconds):
    if name not in _results:
        _order.append(name)
        _results[name] = {"name": name, "outcome": outcome, "message": message,
                          "seconds": seconds}
        return
    entry = _results[name]
    entry["seconds"] = round(entry["seconds"] + seconds, 6)
    # The first failure wins; a later phase only makes a pass worse.
    if entry["outcome"] in ("passed", "skipped") and outcome in ("failed", "error"):
        entry["outcome"] = outcome
        entry["message"] = message
    elif entry["outcome"] == "passed" and outcome == "skipped":
        entry["outcome"] = outcome
        entry["message"] = message


def pytest_runtest_logreport(report):
    if not os.environ.get(ENV):
        return
    seconds = round(getattr(report, "duration", 0.0) or 0.0, 6)
    if report.when == "call":
        outcome = report.outcome  # passed | failed | skipped
        if hasattr(report, "wasxfail"):
            outcome = "skipped" if report.skipped else "passed"
        _record(report.nodeid, outcome, "" if report.passed else _message(report), seconds)
    elif report.failed:
        _record(report.nodeid, "error", _message(report), seconds)
    elif report.skipped:
        _record(report.nodeid, "skipped", _message(report), seconds)
    elif report.when == "setup":
        _record(report.nodeid, "passed", "", seconds)


def pytest_collectreport(report):
    if os.environ.get(ENV) and report.failed:
        _record(report.nodeid or "collection", "error", _message(report), 0.0)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get(ENV)
    if not path:
        return
    document = {"tests": [_results[n] for n in _order], "exitstatus": int(exitstatus)}
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(document, f, ensure_ascii=False, indent=1)
    os.replace(tmp, path)

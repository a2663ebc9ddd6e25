"""A thin client over understudy's generated gRPC stubs: runs, the trace, and
assertions on it.

    client = Client("127.0.0.1:7140")
    run = client.start_run(mode="replay", session="golden")
    ...  # the system under test calls the model with metadata understudy-run=run.id
    client.assert_agent_sequence(run.id, ["orchestrator", "executor", "reviewer"])
    summary = client.end_run(run.id)
    client.assert_all_consumed(run.id)

Every call has a deadline (`timeout`, seconds). A server error becomes
`UnderstudyError` (its gRPC code and message); a failed verdict becomes
`AssertionError` whose message is the server's readable report; a wait that
runs out becomes `TimeoutError` with the server's explanation.
"""

import json
import os
import threading

import grpc

from . import assertions as A
from ._stubs import understudy_pb2 as pb
from ._stubs import understudy_pb2_grpc as pb_grpc

__all__ = ["Client", "RunHandle", "UnderstudyError", "MODES", "TRACE_LEVELS"]

# RunMode by name.
MODES = {
    "record": pb.RUN_MODE_RECORD,
    "replay": pb.RUN_MODE_REPLAY,
    "passthrough": pb.RUN_MODE_PASSTHROUGH,
    "once": pb.RUN_MODE_ONCE,
    "new": pb.RUN_MODE_NEW,
}

# TraceLevel by name (docs/assertions.md, "Trace levels").
TRACE_LEVELS = {
    "full": pb.TRACE_LEVEL_FULL,
    "summary": pb.TRACE_LEVEL_SUMMARY,
    "off": pb.TRACE_LEVEL_OFF,
}


class UnderstudyError(Exception):
    """A call the server refused or failed: `code` (a grpc.StatusCode) and
    `message` (the server's text, which names the field or the cause)."""

    def __init__(self, code, message, method=""):
        self.code = code
        self.message = message
        self.method = method
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{name}: {message}")

    @classmethod
    def from_rpc(cls, error, method=""):
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        details = error.details() if hasattr(error, "details") else str(error)
        return cls(code, details or "", method)


# The attributes of an `understudy sim` agent's sim.state events
# (docs/sim.md#trace), and the patterns of a finished turn.
SIM_STATE = "understudy.sim.state"
SIM_STATE_FROM = "understudy.sim.state.from"
SIM_DONE_STATES = "^(IDLE|DONE|CRASHED)$"
SIM_BUSY_STATES = "^(WORKING|ASKING)$"


def _named(table, what, value):
    if isinstance(value, int):
        return value
    try:
        return table[value]
    except KeyError:
        raise ValueError(f"{what}: {value!r} is not one of {', '.join(table)}") from None


def _attribute(value):
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


class Client:
    """understudy's Runs and Traces services over one gRPC channel.

    address: "HOST:PORT" of `understudy serve` (its first stdout line names
    it). timeout: the deadline of each call, in seconds. The stubs are there
    for anything else: `.runs`, `.traces`, `.model`, `.sessions`, `.channel`.
    """

    def __init__(self, address, *, timeout=10.0):
        self.address = address
        self.timeout = timeout
        self.channel = grpc.insecure_channel(address)
        self.runs = pb_grpc.RunsStub(self.channel)
        self.traces = pb_grpc.TracesStub(self.channel)
        self.model = pb_grpc.ModelStub(self.channel)
        self.sessions = pb_grpc.SessionsStub(self.channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"Client({self.address!r})"

    # --- plumbing -----------------------------------------------------------

    def _call(self, method, name, request, timeout=None):
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as e:
            raise UnderstudyError.from_rpc(e, name) from None

    def _stream(self, start, name):
        """Yields the messages of the server stream that start() opens (at
        the first next()); cancels the call when the consumer stops early."""
        call = start()
        try:
            for message in call:
                yield message
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise TimeoutError(f"{name}: {e.details()}") from None
            raise UnderstudyError.from_rpc(e, name) from None
        finally:
            call.cancel()

    # --- runs ---------------------------------------------------------------

    def start_run(self, *, mode="replay", session="", scenario="", scenario_text="", run_id="",
                  strict=None, trace_level=None, repeat=False):
        """Starts a run and returns its `understudy.v1.Run` (`.id`, ...).

        The keywords are StartRunRequest's fields. mode: "record", "replay",
        "passthrough", "once" or "new". session: NAME or NAME@N. scenario: a
        pack name, or a file under the server's --scenario-dir;
        scenario_text: the scenario document (or a dict). strict: None keeps
        the server's default (strict). trace_level: "full", "summary" (start,
        misses and end only) or "off"; None keeps the server's --trace-level.
        repeat: in replay, once every identical recording of a request is
        used, answer it again from the last one instead of missing (polling
        agents, retries).
        """
        if isinstance(scenario_text, dict):
            scenario_text = json.dumps(scenario_text)
        request = pb.StartRunRequest(session=session, mode=_named(MODES, "mode", mode),
                                     run_id=run_id, scenario=scenario, scenario_text=scenario_text,
                                     repeat=bool(repeat))
        if strict is not None:
            request.strict = bool(strict)
        if trace_level is not None:
            request.trace_level = _named(TRACE_LEVELS, "trace_level", trace_level)
        return self._call(self.runs.StartRun, "StartRun", request)

    def import_session(self, jsonl, *, name=""):
        """Imports a session file (the JSONL of `understudy export`, as text,
        bytes or a path) as a new closed version; returns its
        `understudy.v1.Session` (`.name`, `.version`). name: store it under
        this name instead of the file's."""
        if isinstance(jsonl, os.PathLike):
            with open(jsonl, "rb") as f:
                jsonl = f.read()
        elif isinstance(jsonl, str):
            jsonl = jsonl.encode()
        return self._call(self.sessions.ImportSession, "ImportSession",
                          pb.ImportSessionRequest(jsonl=jsonl, name=name))

    def end_run(self, run_id):
        """Ends the run; returns its `understudy.v1.RunSummary`. Ending an
        ended run returns the same summary."""
        return self._call(self.runs.EndRun, "EndRun", pb.EndRunRequest(run=run_id))

    def get_run(self, run_id):
        return self._call(self.runs.GetRun, "GetRun", pb.GetRunRequest(run=run_id))

    def open_run(self, *, http=None, **start):
        """start_run(**start) as a RunHandle, usable as a context manager that
        ends the run on exit. http: the server's "http://HOST:PORT" for the
        handle's base URLs."""
        return RunHandle(self, self.start_run(**start), http=http)

    # --- the trace ----------------------------------------------------------

    def query(self, run_id=None, *, session=None, kinds=(), agent="", tool="", phase="",
              attributes=None, attribute_patterns=None, min_seq=0, max_seq=0):
        """The matching events of a run (or, with session=, of every run of
        that session), in seq order, as a list of `understudy.v1.TraceEvent`."""
        request = pb.QueryRequest(
            run=run_id or "", session=session or "",
            filter=A.event_filter(kinds=kinds, agent=agent, tool=tool, phase=phase,
                                  attributes=attributes, attribute_patterns=attribute_patterns,
                                  min_seq=min_seq, max_seq=max_seq))
        return list(self._stream(lambda: self.traces.QueryStream(request, timeout=self.timeout),
                                 "QueryStream"))

    def wait_for(self, run_id, *, timeout=5.0, **filter):
        """The first event of the run matching the filter (keywords as for
        query), past or future. TimeoutError with the server's explanation
        (what was awaited, the run's state, its last event) when none comes
        within `timeout` seconds (None: no limit); UnderstudyError (FAILED_PRECONDITION) when
        the run ends without one."""
        request = pb.WaitForRequest(run=run_id, filter=A.event_filter(**filter))
        deadline = None
        if timeout is not None:
            request.timeout_ms = max(1, int(round(timeout * 1000)))
            # The server answers at `timeout`; the call's deadline leaves it
            # room to say why.
            deadline = timeout + self.timeout
        try:
            return self.traces.WaitFor(request, timeout=deadline)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise TimeoutError(e.details() or f"WaitFor: nothing within {timeout}s") from None
            raise UnderstudyError.from_rpc(e, "WaitFor") from None

    def wait_for_state(self, run_id, agent, state, *, after_seq=0, timeout=5.0):
        """The first `sim.state` event of `agent` (an `understudy sim`) entering
        `state` ("IDLE", "WORKING", "ASKING", "DONE", "CRASHED", ...) after
        seq `after_seq`, past or future. Errors as wait_for."""
        return self.wait_for(run_id, timeout=timeout, kinds=["sim.state"], agent=agent,
                             attributes={SIM_STATE: state}, min_seq=after_seq + 1)

    def wait_for_done(self, run_id, agent, *, after_seq=0, timeout=5.0):
        """The first `sim.state` event after seq `after_seq` in which `agent`
        finished a turn: it went from WORKING or ASKING to IDLE, DONE or
        CRASHED. Pass the seq of the last event seen (e.g. the previous
        turn's) to wait for the next turn. Errors as wait_for."""
        return self.wait_for(run_id, timeout=timeout, kinds=["sim.state"], agent=agent,
                             attribute_patterns={SIM_STATE: SIM_DONE_STATES,
                                                 SIM_STATE_FROM: SIM_BUSY_STATES},
                             min_seq=after_seq + 1)

    def watch(self, run_id, *, after_seq=0, timeout=None, **filter):
        """Yields the run's matching events (keywords as for query) as they
        happen, from after `after_seq`, until the run ends. timeout: a
        deadline for the whole watch in seconds (None: none); TimeoutError
        when it passes. Closing the generator cancels the call."""
        request = pb.WatchRequest(run=run_id, filter=A.event_filter(**filter), after_seq=after_seq)
        return self._stream(lambda: self.traces.Watch(request, timeout=timeout), "Watch")

    def emit(self, run_id, kind, *, agent="", **attributes):
        """Appends a custom event (kind: [a-z][a-z0-9_.]*, not one of
        understudy's own) to the run's trace; returns it with its seq.
        Attribute values that are not strings are sent as their JSON text
        (`true`, `3`, `{"a": 1}`); names with dots: `**{"app.step": "x"}`."""
        request = pb.EmitRequest(run=run_id, kind=kind, agent=agent,
                                 attributes={k: _attribute(v) for k, v in attributes.items()})
        return self._call(self.traces.Emit, "Emit", request)

    # --- assertions ---------------------------------------------------------

    def check(self, run_id, *assertions):
        """Evaluates `understudy.v1.Assertion`s (see the `assertions` module)
        on the run's trace in one call; returns the AssertResponse whatever
        the verdict (`.passed`, `.results`, `.report`)."""
        if len(assertions) == 1 and isinstance(assertions[0], (list, tuple)):
            assertions = tuple(assertions[0])
        for a in assertions:
            if not isinstance(a, pb.Assertion):
                raise TypeError(f"check: expected understudy.v1.Assertion, got {type(a).__name__}")
        return self._call(self.traces.Assert, "Assert",
                          pb.AssertRequest(run=run_id, assertions=list(assertions)))

    # The assert_* helpers hide their frames from pytest's tracebacks
    # (__tracebackhide__), so that a failure points at the test's line.

    def _require(self, run_id, assertion):
        __tracebackhide__ = True
        verdict = self.check(run_id, assertion)
        if not verdict.passed:
            report = verdict.report or "\n".join(r.explanation for r in verdict.results)
            raise AssertionError(report)
        return verdict

    def assert_agent_sequence(self, run_id, agents, match="exact", collapse_repeats=False):
        __tracebackhide__ = True
        return self._require(run_id, A.agent_sequence(agents, match, collapse_repeats))

    def assert_phase_transitions(self, run_id, phases, match="exact"):
        __tracebackhide__ = True
        return self._require(run_id, A.phase_transitions(phases, match))

    def assert_tool_calls(self, run_id, calls, *, agent="", match="exact"):
        __tracebackhide__ = True
        return self._require(run_id, A.tool_calls(calls, agent=agent, match=match))

    def assert_feedback_propagated(self, run_id, from_agent, to_agent, keyword):
        __tracebackhide__ = True
        return self._require(run_id, A.feedback_propagated(from_agent, to_agent, keyword))

    def assert_count(self, run_id, op, n, **filter):
        __tracebackhide__ = True
        return self._require(run_id, A.count(op, n, **filter))

    def assert_no_misses(self, run_id):
        __tracebackhide__ = True
        return self._require(run_id, A.no_misses())

    def assert_all_consumed(self, run_id):
        __tracebackhide__ = True
        return self._require(run_id, A.all_consumed())

    def assert_spec(self, run_id, spec_text_or_path):
        __tracebackhide__ = True
        return self._require(run_id, A.spec(spec_text_or_path))


class RunHandle:
    """One run, with the client's trace and assert methods bound to it.

    `.id`, `.run` (the Run as started), `.metadata` (gRPC metadata naming the
    run), `.openai_base_url` / `.anthropic_base_url` (when the server's HTTP
    address is known), `.summary` (after end()). As a context manager it ends
    the run on exit.
    """

    def __init__(self, client, run, *, http=None):
        self.client = client
        self.run = run
        self.id = run.id
        self.http = http.rstrip("/") if http else None
        self.summary = None
        self._lock = threading.Lock()

    def __repr__(self):
        return f"RunHandle({self.id!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.end()

    @property
    def metadata(self):
        """Call metadata for the model: [("understudy-run", id)]."""
        return [("understudy-run", self.id)]

    def agent_metadata(self, agent):
        """Call metadata naming the run and the calling agent."""
        return [("understudy-run", self.id), ("understudy-agent", agent)]

    def _http(self):
        if not self.http:
            raise RuntimeError("the server's HTTP address is not known (set UNDERSTUDY_HTTP when "
                               "attaching to a running server)")
        return self.http

    @property
    def openai_base_url(self):
        """OPENAI_BASE_URL for this run: http://HOST:PORT/run/ID/v1."""
        return f"{self._http()}/run/{self.id}/v1"

    @property
    def anthropic_base_url(self):
        """ANTHROPIC_BASE_URL for this run: http://HOST:PORT/run/ID."""
        return f"{self._http()}/run/{self.id}"

    def end(self):
        """Ends the run (once; later calls return the same summary)."""
        with self._lock:
            if self.summary is None:
                self.summary = self.client.end_run(self.id)
            return self.summary

    def get(self):
        return self.client.get_run(self.id)

    def query(self, **filter):
        return self.client.query(self.id, **filter)

    def wait_for(self, *, timeout=5.0, **filter):
        return self.client.wait_for(self.id, timeout=timeout, **filter)

    def wait_for_state(self, agent, state, *, after_seq=0, timeout=5.0):
        return self.client.wait_for_state(self.id, agent, state, after_seq=after_seq,
                                          timeout=timeout)

    def wait_for_done(self, agent, *, after_seq=0, timeout=5.0):
        return self.client.wait_for_done(self.id, agent, after_seq=after_seq, timeout=timeout)

    def watch(self, *, after_seq=0, timeout=None, **filter):
        return self.client.watch(self.id, after_seq=after_seq, timeout=timeout, **filter)

    def emit(self, kind, *, agent="", **attributes):
        return self.client.emit(self.id, kind, agent=agent, **attributes)

    def check(self, *assertions):
        return self.client.check(self.id, *assertions)

    def assert_agent_sequence(self, agents, match="exact", collapse_repeats=False):
        __tracebackhide__ = True
        return self.client.assert_agent_sequence(self.id, agents, match, collapse_repeats)

    def assert_phase_transitions(self, phases, match="exact"):
        __tracebackhide__ = True
        return self.client.assert_phase_transitions(self.id, phases, match)

    def assert_tool_calls(self, calls, *, agent="", match="exact"):
        __tracebackhide__ = True
        return self.client.assert_tool_calls(self.id, calls, agent=agent, match=match)

    def assert_feedback_propagated(self, from_agent, to_agent, keyword):
        __tracebackhide__ = True
        return self.client.assert_feedback_propagated(self.id, from_agent, to_agent, keyword)

    def assert_count(self, op, n, **filter):
        __tracebackhide__ = True
        return self.client.assert_count(self.id, op, n, **filter)

    def assert_no_misses(self):
        __tracebackhide__ = True
        return self.client.assert_no_misses(self.id)

    def assert_all_consumed(self):
        __tracebackhide__ = True
        return self.client.assert_all_consumed(self.id)

    def assert_spec(self, spec_text_or_path):
        __tracebackhide__ = True
        return self.client.assert_spec(self.id, spec_text_or_path)

"""Builders for `understudy.v1.Assertion` messages, for `Client.check`.

Each returns one Assertion; `Client.check(run_id, a, b, ...)` sends them in
one `Traces.Assert` call and returns the AssertResponse. The `Client.assert_*`
helpers use the same builders and raise on a failed verdict.

    from understudy_testing import assertions as A
    verdict = client.check(run_id,
                           A.agent_sequence(["executor", "reviewer"], match="subsequence"),
                           A.count(">=", 1, kinds=["tool_call"], tool="continue"),
                           A.no_misses())
"""

import json
import os

from ._stubs import understudy_pb2 as pb

__all__ = [
    "MATCHES", "COMPARISONS", "event_filter", "agent_sequence", "phase_transitions", "tool_calls",
    "feedback_propagated", "count", "no_misses", "all_consumed", "spec",
]

# SequenceMatch by name.
MATCHES = {
    "exact": pb.SEQUENCE_MATCH_EXACT,
    "subsequence": pb.SEQUENCE_MATCH_SUBSEQUENCE,
    "prefix": pb.SEQUENCE_MATCH_PREFIX,
}

# Comparison by operator.
COMPARISONS = {
    "==": pb.COMPARISON_EQ,
    "!=": pb.COMPARISON_NE,
    "<": pb.COMPARISON_LT,
    "<=": pb.COMPARISON_LE,
    ">": pb.COMPARISON_GT,
    ">=": pb.COMPARISON_GE,
}


def _match(match):
    if isinstance(match, int):
        return match
    try:
        return MATCHES[match]
    except KeyError:
        raise ValueError(f"match: {match!r} is not one of {', '.join(MATCHES)}") from None


def _strings(values, what):
    if isinstance(values, str):
        raise TypeError(f"{what}: give a list of strings, not the string {values!r}")
    return [str(v) for v in values]


def event_filter(kinds=(), agent="", tool="", phase="", attributes=None, attribute_patterns=None,
                 min_seq=0, max_seq=0):
    """An `understudy.v1.EventFilter`; every condition given must hold.

    kinds: one kind or several (any of them); agent, tool, phase: equal;
    attributes: each equal; attribute_patterns: each an RE2 pattern found in
    the attribute; min_seq, max_seq: inclusive bounds (0: open).
    """
    if isinstance(kinds, str):
        kinds = [kinds]
    return pb.EventFilter(
        kinds=list(kinds), agent=agent or "", tool=tool or "", phase=phase or "",
        attributes=dict(attributes or {}), attribute_patterns=dict(attribute_patterns or {}),
        min_seq=min_seq or 0, max_seq=max_seq or 0)


def agent_sequence(agents, match="exact", collapse_repeats=False, *, name=""):
    """The agents of the run's exchanges, in order."""
    return pb.Assertion(name=name, agent_sequence=pb.AgentSequenceAssertion(
        agents=_strings(agents, "agents"), match=_match(match),
        collapse_repeats=collapse_repeats))


def phase_transitions(phases, match="exact", *, name=""):
    """The phases entered, in order (the phase_transition events' targets)."""
    return pb.Assertion(name=name, phase_transitions=pb.PhaseTransitionsAssertion(
        phases=_strings(phases, "phases"), match=_match(match)))


def _expected_call(call):
    if isinstance(call, str):
        return pb.ExpectedToolCall(name=call)
    if isinstance(call, pb.ExpectedToolCall):
        return call
    try:
        name, arguments = call
    except (TypeError, ValueError):
        raise TypeError(
            f"calls: each is a name or a (name, arguments) pair, got {call!r}") from None
    if arguments is None:
        arguments = ""
    elif not isinstance(arguments, str):
        arguments = json.dumps(arguments, sort_keys=True)
    return pb.ExpectedToolCall(name=name, arguments=arguments)


def tool_calls(calls, *, agent="", match="exact", name=""):
    """The tool calls in the run's answers, in order.

    calls: names, or (name, arguments) pairs where arguments is a dict (or
    JSON object text) that must be a subset of the call's arguments.
    agent: only this agent's calls ("" for everyone's).
    """
    if isinstance(calls, str):
        calls = [calls]
    return pb.Assertion(name=name, tool_calls=pb.ToolCallsAssertion(
        agent=agent, calls=[_expected_call(c) for c in calls], match=_match(match)))


def feedback_propagated(from_agent, to_agent, keyword, *, name=""):
    """`keyword` is in an answer of from_agent, then in a later request of to_agent."""
    check = pb.FeedbackPropagatedAssertion(to=to_agent, keyword=keyword)
    setattr(check, "from", from_agent)  # `from` is a Python keyword
    return pb.Assertion(name=name, feedback_propagated=check)


def count(op, n, *, name="", **filter):
    """The number of events matching the filter compares to n with op
    ("==", "!=", "<", "<=", ">", ">=")."""
    try:
        comparison = COMPARISONS[op]
    except KeyError:
        raise ValueError(f"op: {op!r} is not one of {' '.join(COMPARISONS)}") from None
    return pb.Assertion(name=name, count=pb.CountAssertion(
        filter=event_filter(**filter), comparison=comparison, n=n))


def no_misses(*, name=""):
    """No request of the run missed."""
    return pb.Assertion(name=name, no_misses=True)


def all_consumed(*, name=""):
    """Every recorded exchange the run replays was used (check after end_run)."""
    return pb.Assertion(name=name, all_consumed=True)


def spec(text_or_path, *, name=""):
    """A selector-plus-checks spec: YAML or JSON text, a dict, or a path to a
    file (os.PathLike, or a one-line string naming an existing file)."""
    if isinstance(text_or_path, dict):
        text = json.dumps(text_or_path)
    elif isinstance(text_or_path, os.PathLike):
        with open(text_or_path, encoding="utf-8") as f:
            text = f.read()
    elif isinstance(text_or_path, str):
        text = text_or_path
        if "\n" not in text and text.strip() and os.path.isfile(text):
            with open(text, encoding="utf-8") as f:
                text = f.read()
    else:
        raise TypeError(f"spec: give text, a dict or a path, got {type(text_or_path).__name__}")
    return pb.Assertion(name=name, spec=text)

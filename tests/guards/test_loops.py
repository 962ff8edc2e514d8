"""Loop detectors: each fires at its threshold and not one call before; warnings at half."""

from __future__ import annotations

import pytest

from runner.guards.loops import LoopConfig, LoopDetector, Observation


def obs(call: str, result: str = "r", failed: bool = False) -> Observation:
    return Observation(call, f"{call}:{result}", failed, call)


def feed(detector: LoopDetector, seq: list[Observation]):
    """Observations until one fires; returns (index of the firing call or None, warnings by index)."""
    warnings = {}
    for i, o in enumerate(seq, start=1):
        fired, warned = detector.observe(o)
        if warned:
            warnings[i] = [w.detector for w in warned]
        if fired is not None:
            return i, fired, warnings
    return None, None, warnings


def test_same_call_same_result_fires_at_threshold():
    at, fired, warnings = feed(LoopDetector(LoopConfig()), [obs("A")] * 10)
    assert (at, fired.detector, fired.count) == (5, "same_call", 5)
    assert warnings == {3: ["same_call"]}


def test_same_call_changing_result_is_progress():
    seq = [obs("poll", f"state{i}") for i in range(40)]
    at, _, warnings = feed(LoopDetector(LoopConfig()), seq)
    assert at is None and warnings == {30: ["call_budget"]}  # only the budget's half-way note


def test_failing_retries_fire_at_max_attempts():
    at, fired, _ = feed(LoopDetector(LoopConfig()), [obs("A", "E", failed=True)] * 5)
    assert (at, fired.detector) == (3, "failing_retries")


def test_failing_retries_count_interleaved_attempts():
    seq = [obs("A", "E", True), obs("B", "1"), obs("A", "E", True), obs("C", "2"), obs("A", "E", True)]
    at, fired, _ = feed(LoopDetector(LoopConfig()), seq)
    assert (at, fired.detector, fired.count) == (5, "failing_retries", 3)


def test_no_progress_catches_an_interleaved_loop():
    seq = []
    for i in range(15):
        seq += [obs("A"), obs(f"X{i}", "new")]
    at, fired, warnings = feed(LoopDetector(LoopConfig()), seq)
    assert (at, fired.detector, fired.count) == (19, "no_progress", 10)  # A's 10th appearance
    assert "no_progress" in warnings[9]


def test_ping_pong_fires_at_threshold_not_before():
    seq = [obs("A"), obs("B")] * 10
    at, fired, warnings = feed(LoopDetector(LoopConfig()), seq)
    assert (at, fired.detector, fired.count) == (10, "ping_pong", 10)
    assert "ping_pong" in warnings[5]


def test_ping_pong_needs_unchanged_results():
    seq = [obs("A", str(i)) if i % 2 == 0 else obs("B") for i in range(20)]
    _, fired, _ = feed(LoopDetector(LoopConfig()), seq)
    assert fired is None or fired.detector != "ping_pong"


def test_circuit_breaker_on_a_cycle_of_four():
    seq = [obs(c) for c in "ABCD"] * 10
    at, fired, _ = feed(LoopDetector(LoopConfig()), seq)
    assert (at, fired.detector, fired.count) == (34, "circuit_breaker", 30)


def test_thirty_distinct_calls_pass():
    at, _, warnings = feed(LoopDetector(LoopConfig()), [obs(f"call{i}") for i in range(30)])
    assert at is None
    assert warnings == {30: ["call_budget"]}  # half of maxToolCalls 60


@pytest.mark.parametrize("limit", [1, 6, 60])
def test_call_budget(limit):
    at, fired, _ = feed(LoopDetector(LoopConfig(max_tool_calls=limit)), [obs(f"c{i}") for i in range(80)])
    assert (at, fired.detector) == (limit, "call_budget")


def test_config_from_policy_section():
    c = LoopConfig.from_policy({"sameToolThreshold": 2, "maxToolCalls": 9, "pingPongThreshold": 4})
    assert (c.same_tool_threshold, c.max_tool_calls, c.ping_pong_threshold, c.max_attempts) == (2, 9, 4, 3)


def test_each_warning_is_given_once():
    detector = LoopDetector(LoopConfig(same_tool_threshold=10))
    _, _, warnings = feed(detector, [obs("A")] * 9)
    assert [w for ws in warnings.values() for w in ws].count("same_call") == 1

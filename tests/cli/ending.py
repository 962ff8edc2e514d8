"""How a CLI run ended, checked the same way by the model-server tests: the exit code, and a run directory
that says the same."""

from __future__ import annotations

from tests.conftest import Result


def ended_with(r: Result, code: int, status: str) -> dict:
    """The exit code, and a run directory that says the same: a summary and a closing event."""
    assert r.code == code, (r.code, r.stderr[-2000:])
    s = r.summary
    assert (s["status"], s["exit_code"]) == (status, code)
    assert r.of_type("run_finished")[0]["exit_code"] == code
    return s

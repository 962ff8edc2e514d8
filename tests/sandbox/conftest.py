"""Sandbox tests run the real bubblewrap. On Linux they never skip: `.ci/run` installs it."""

from __future__ import annotations

import platform

import pytest

from runner.sandbox.probe import probe


@pytest.fixture(scope="session")
def sandbox_available() -> None:
    found = probe()
    if not found.available:
        if platform.system() != "Linux":
            pytest.skip(f"no sandbox mechanism on {platform.system()} yet")
        pytest.fail(f"the sandbox must work on this machine for these tests: {found.reason}")

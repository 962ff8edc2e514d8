"""action.yml warns when the checkout persisted the job's token, in either form (issue 25, item 1)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.test_workflows import action_step, run_step

WARNING = "::warning title=agent-run: persisted credentials::"


@pytest.mark.parametrize(("setting", "value", "warned"), [
    ("http.https://github.com/.extraheader", "AUTHORIZATION: basic eC1hY2Nlc3M=", True),
    ("includeIf.gitdir:{ws}/.git.path", "{temp}/git-credentials-0b3c.config", True),
    ("includeIf.gitdir:{ws}/.git.path", "/etc/elsewhere.config", False),
    ("remote.origin.url", "https://github.com/o/r", False),  # persist-credentials: false
])
def test_the_action_warns_when_the_checkout_persisted_credentials(tmp_path, setting, value, warned):
    ws, temp = tmp_path / "ws", tmp_path / "runner-temp"
    temp.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "--local", setting.format(ws=ws),
                    value.format(temp=temp)], check=True)
    env = {**os.environ, "GITHUB_WORKSPACE": str(ws), "RUNNER_TEMP": str(temp)}
    proc, out = run_step(action_step("credentials")["run"], env, ws, tmp_path)
    assert proc.returncode == 0, out
    assert (WARNING in out) is warned, out
    assert "persist-credentials: false" in out or not warned

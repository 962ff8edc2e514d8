"""README's Quickstart: the shipped example replays offline and exits 0, every time."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import agent_run_argv, clean_env

HELLO = Path(__file__).resolve().parents[1] / "examples" / "hello"


def test_hello_example_replays_offline_and_repeatably(tmp_path):
    ws = tmp_path / "hello"
    shutil.copytree(HELLO, ws, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md"))
    argv = [*agent_run_argv(), "--workspace", str(ws), "--policy", str(ws / "policy.jsonc"),
            "--model", f"replay:{ws / 'recording'}", str(ws / "task.md")]
    env = clean_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # nothing listens: the replay must not need it
    for _ in range(2):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "Wrote REPORT.md" in proc.stdout
    report = (ws / "REPORT.md").read_text()
    assert "src/app.py:7:" in report and "src/util.py:5:" in report
    assert len(list((ws / ".agent-run" / "runs").iterdir())) == 2

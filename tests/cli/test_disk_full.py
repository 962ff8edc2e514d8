"""A full disk under the run directory: the run ends `failed` with the reason, exit 1, no traceback, and
whatever was written stays parseable. The disk is a real 48 KiB tmpfs, mounted in a private user and
mount namespace (`unshare -rm`) around the real CLI."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

import pytest

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import reply

pytestmark = pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")


def _run_on_small_disk(fake, workspace, tmp_path, size="48k"):
    runs = tmp_path / "smallfs"
    runs.mkdir()
    inner = " ".join(shlex.quote(a) for a in [*agent_run_argv(), "--sandbox", "off", "--approve", "bash:shell:*",
                                                  "--runs-dir", str(runs), "task.md"])
    script = f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(runs))} && {inner}; code=$?; " \
             f"cp -r {shlex.quote(str(runs))} {shlex.quote(str(tmp_path / 'copy'))}; exit $code"
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here: {probe.stderr.decode().strip()}")
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=workspace, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_full_disk_is_a_failed_run_not_a_traceback(fake, workspace, tmp_path):
    # Each call prints ~20 KB: the events log and the spill files fill 48 KiB within a few turns.
    big = "python3 -c \"print('x' * 20000)\""
    fake.add(*[reply(calls=[("bash", {"command": big})]) for _ in range(8)], reply("done"))
    done = _run_on_small_disk(fake, workspace, tmp_path)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    assert "No space left on device" in done.stderr
    [run_dir] = [p for p in (tmp_path / "copy").iterdir() if p.is_dir()]
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line whole: nothing torn
    assert records and records[0]["type"] == "run_started"
    summary_path = run_dir / "summary.json"
    if summary_path.exists():  # written when the space allowed it
        summary = json.loads(summary_path.read_text())
        assert summary["status"] == "failed" and "No space left on device" in summary["reason"]


def test_a_task_on_stdin_that_is_not_utf8_is_a_usage_error(fake, workspace):
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    done = subprocess.run([*agent_run_argv(), "-"], cwd=workspace, env=env, input=b"Fix \xff\xfe the bug\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert b"not UTF-8" in done.stderr and b"Traceback" not in done.stderr
    assert fake.requests == []

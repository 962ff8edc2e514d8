"""The file tools and web_fetch hold the run's promises (issue 12), through the real CLI: a FIFO, a big
tree, a giant line, a name that is not UTF-8 or a symlink loop neither blocks the run past `--timeout`
nor ends it, and every result, web_fetch's too, goes through the same truncation and spill file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import Result, _dirs, agent_run_argv, clean_env
from tests.fakes.openai_server import reply

# Each run has --timeout TIMEOUT and must succeed: a tool that blocked (on a FIFO, a loop, a giant line) would
# end the run at its timeout, status budget_exhausted, and fail the test. The timeout only stops such a hang:
# a run here takes a second or two, several on a loaded machine; how fast the tools are is bench/'s to measure.
# The process's own timeout comes after the run's, so even a hanging run leaves a whole run directory.
TIMEOUT = 60
PROCESS_TIMEOUT = 2 * TIMEOUT


def _run(agent_run, *args: str) -> Result:
    return agent_run("--sandbox", "off", "--timeout", str(TIMEOUT), *args, "task.md", timeout=PROCESS_TIMEOUT)


def _complete(r: Result) -> None:
    """The run directory is whole: a summary, and an events log that ends with run_finished."""
    assert r.summary["status"]
    assert r.events[-1]["type"] == "run_finished"
    assert r.events[-1]["exit_code"] == r.code


def _contents(r: Result) -> list[str]:
    return [e["content"] for e in r.of_type("tool_result")]


@pytest.fixture
def fifo(workspace: Path) -> Path:
    path = workspace / "pipe"
    os.mkfifo(path)
    return path


def test_grep_skips_a_fifo(fake, workspace, fifo, agent_run):
    (workspace / "notes.txt").write_text("needle here\n")
    fake.add(reply(calls=[("grep", {"pattern": "needle", "path": "."})]), reply("done"))
    r = _run(agent_run)
    assert r.code == 0, r.stderr
    _complete(r)
    [content] = _contents(r)
    assert content.startswith("notes.txt:1: needle here")
    if shutil.which("rg") is None:  # with ripgrep, the FIFO is never a candidate: nothing to say of it
        assert "not a regular file" in content


def test_read_of_a_fifo_is_an_error_the_model_can_act_on(fake, workspace, fifo, agent_run):
    fake.add(reply(calls=[("read", {"path": "pipe"}), ("grep", {"pattern": "x", "path": "pipe"})]), reply("done"))
    r = _run(agent_run)
    assert r.code == 0, r.stderr
    _complete(r)
    read, grep = (json.loads(c) for c in _contents(r))
    assert read["error"]["type"] == "IOError" and "not a regular file" in read["error"]["message"]
    assert grep["error"]["type"] == "IOError" and "not a regular file" in grep["error"]["message"]


def _tree(root: Path, files: int, per_dir: int = 500) -> None:
    body = b"alpha beta gamma\n" * 4
    for i in range(files):
        d = root / f"d{i // per_dir:04d}"
        if i % per_dir == 0:
            d.mkdir(parents=True)
        (d / f"f{i}.txt").write_bytes(body)


def test_grep_over_a_big_tree_finishes_and_finds_nothing(fake, workspace, agent_run):
    _tree(workspace / "big", 20_000)
    fake.add(reply(calls=[("grep", {"pattern": "no-such-word", "path": "."})]), reply("done"))
    r = _run(agent_run)
    assert r.code == 0, (r.stderr, r.summary)
    _complete(r)
    [content] = _contents(r)
    assert content.startswith("[no matches for `no-such-word` in 20001 files under `.`]")


def _run_measured(fake, workspace: Path, tmp_path: Path, *args: str) -> tuple[Result, int | None]:
    """Like the agent_run fixture, with the CLI's peak RSS in KiB, as /usr/bin/time tells it (None without
    it). Not the rusage of a child of this process: a forked child's peak starts at pytest's own size."""
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", AGENT_RUN_RETRY_BASE_S="0.01")
    runs_dir = workspace / ".agent-run" / "runs"
    before = _dirs(runs_dir)
    rss_file = tmp_path / "rss.txt"
    timer = ["/usr/bin/time", "-f", "%M", "-o", str(rss_file)] if os.access("/usr/bin/time", os.X_OK) else []
    proc = subprocess.run([*timer, *agent_run_argv(), *args], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT)
    rss = int(rss_file.read_text().split()[-1]) if timer else None
    return Result(proc.returncode, proc.stdout, proc.stderr, runs_dir, sorted(_dirs(runs_dir) - before)), rss


def test_read_of_a_giant_line_is_cut_in_bounded_memory(fake, workspace, tmp_path):
    size = 200 * 1024 * 1024
    chunk = b"a" * (1024 * 1024)
    with (workspace / "giant.txt").open("wb") as f:
        for _ in range(size // len(chunk)):
            f.write(chunk)
    fake.add(reply(calls=[("read", {"path": "giant.txt", "limit": 5})]), reply("done"))
    r, rss_kib = _run_measured(fake, workspace, tmp_path, "--sandbox", "off", "--timeout", str(TIMEOUT), "task.md")
    assert r.code == 0, r.summary
    _complete(r)
    [content] = _contents(r)
    first = content.splitlines()[0]
    assert first.startswith("1\taaaa") and "line cut at" in first
    assert len(content) < 10_000
    # The CLI alone peaks at ~80 MiB here; reading the line whole took 480 MiB.
    assert rss_kib is None or rss_kib < 150 * 1024, f"peak RSS {rss_kib} KiB"


@pytest.fixture
def bad_name(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "ok.txt").write_text("needle ok\n")
    with open(os.path.join(os.fsencode(workspace / "src"), b"bad\xff.txt"), "wb") as f:
        f.write(b"needle bad\n")


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("list", {"path": "src"}, "bad\\xff.txt\nok.txt"),
    ("glob", {"pattern": "src/*.txt"}, "src/bad\\xff.txt\nsrc/ok.txt"),
    ("grep", {"pattern": "needle", "path": "src"}, "src/bad\\xff.txt:1: needle bad\nsrc/ok.txt:1: needle ok"),
])
def test_a_name_that_is_not_utf8_is_shown_escaped(fake, workspace, bad_name, agent_run, tool, args, expected):
    fake.add(reply(calls=[(tool, args)]), reply("done"))
    r = _run(agent_run)
    assert r.code == 0, r.stderr
    _complete(r)
    assert _contents(r) == [expected]


def test_list_copes_with_a_symlink_loop(fake, workspace, agent_run):
    (workspace / "a").symlink_to("b")
    (workspace / "b").symlink_to("a")
    (workspace / "self").symlink_to("self")
    fake.add(reply(calls=[("list", {"path": "."}), ("glob", {"pattern": "**"}),
                          ("grep", {"pattern": "x"})]), reply("done"))
    r = _run(agent_run)
    assert r.code == 0, r.stderr
    _complete(r)
    listed, globbed, grepped = _contents(r)
    assert [e for e in listed.splitlines() if not e.startswith(".agent-run")] == [
        "a (symlink loop)", "b (symlink loop)", "self (symlink loop)", "task.md"]
    assert not any(c.startswith("{") for c in (globbed, grepped))


def test_web_fetch_results_are_truncated_like_any_other(fake, tmp_path, workspace, agent_run):
    page = "".join(f"line {i:05d} " + "x" * 12 + "\n" for i in range(10_002)).encode()
    assert len(page) > 240_000

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/plain; charset=utf-8")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    policy = tmp_path / "p.jsonc"
    net = {"domain": "network", "pattern": f"net:127.0.0.1:{server.server_address[1]}", "decision": "allow"}
    policy.write_text(json.dumps({"extends": "default", "permission": {"rules": [net]}}))
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/big.txt"
        fake.add(reply(calls=[("web_fetch", {"url": url})]), reply("done"))
        r = _run(agent_run, "--policy", str(policy))
    finally:
        server.shutdown()
        server.server_close()
    assert r.code == 0, r.stderr
    _complete(r)
    [result] = r.of_type("tool_result")
    assert len(result["content"].encode()) < 52_000
    assert "lines truncated" in result["content"] or "bytes truncated" in result["content"]
    details = result["details"]
    assert details["truncated"] is True and details["lines"] == 10_004  # the header, a blank line, the page
    spilled = Path(details["output_path"]).read_text(encoding="utf-8")
    assert spilled.endswith(page.decode())
    assert "line 10001" not in json.dumps(fake.requests)

"""Faults, round two (issue 26): a model server's response bounded by its decoded size (item 5), its
requested waits bounded (item 16), and the model client's smaller faults (item 17): stream-json deltas
after a retry, a dropped request parameter, a token in the base URL. The real CLI against the scripted
loopback server."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

from tests.cli.ending import ended_with
from tests.conftest import Result, _dirs, agent_run_argv, clean_env
from tests.fakes.openai_server import error, raw, reply, truncated_stream
from tests.fakes.zygote import Zygote, ZygotePopen

LOW_LIMIT = {"AGENT_RUN_MAX_RESPONSE_BYTES": str(1024 * 1024), "AGENT_RUN_MAX_RETRIES": "1"}
GZIP = {"content-encoding": "gzip"}


def gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


def completion(content: str) -> bytes:
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}).encode()


def sse(content: str, piece: int = 4096) -> bytes:
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        payload = {"id": "s", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(payload)}\n\n".encode()

    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": content[i:i + piece]}) for i in range(0, len(content), piece)]
    return b"".join([*parts, chunk({}, "stop"), b"data: [DONE]\n\n"])


def bomb(gigabytes: int) -> bytes:
    """A gzip body of ~1 MB per GB that inflates to `gigabytes` GB of zeros: one 1 MiB block compressed after
    a full flush is the same bytes every time, so it is made once and repeated (no trailer: nothing
    reaches it)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1 << 20)
    head = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    return head + again * (gigabytes * 1024 - 1)


# --- item 5: the decoded size of a response ------------------------------------------------


def test_a_gzip_body_over_the_limit_is_a_bad_response_retried_like_a_5xx(fake, agent_run):
    body = gzip(completion("a" * (3 << 20)))  # a few KB on the wire, 3 MiB decoded: over a 1 MiB limit
    fake.add(raw(200, body, headers=GZIP), raw(200, gzip(completion("The answer is 4.")), headers=GZIP))
    r = agent_run("task.md", env=LOW_LIMIT, timeout=120)
    ended_with(r, 0, "success")
    assert r.stdout.strip() == "The answer is 4."  # a gzip body under the limit is an answer
    [retry] = r.of_type("model_retry")
    assert "AGENT_RUN_MAX_RESPONSE_BYTES" in retry["error"]


def test_a_streamed_gzip_body_over_the_limit_ends_with_exit_6(fake, agent_run):
    body = gzip(sse("a" * (3 << 20)))
    fake.add(*[raw(200, body, content_type="text/event-stream", headers=GZIP)] * 2)
    r = agent_run("--stream", "task.md", env=LOW_LIMIT, timeout=120)
    s = ended_with(r, 6, "model_error")
    assert "AGENT_RUN_MAX_RESPONSE_BYTES" in s["reason"] and "after 2 attempts" in s["reason"]
    assert len(r.of_type("model_retry")) == 1 and "aaaa" not in r.stdout


def peak_rss_run(zygote: Zygote | None, argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, the child's peak RSS in KiB). Forked by the worker's zygote when it serves
    (the peak read from the child's /proc VmHWM, a high-water mark, until it exits), else started by a fresh
    parent that reports its children's ru_maxrss."""
    if zygote is None or not zygote.serves(argv, env):
        parent = ("import json, resource, subprocess, sys\n"
                  "p = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=300)\n"
                  "print(json.dumps([p.returncode, p.stdout, p.stderr,"
                  " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n")
        out = subprocess.run([sys.executable, "-c", parent, *argv], cwd=cwd, env=env, capture_output=True,
                             text=True, timeout=300, check=True)
        return tuple(json.loads(out.stdout))  # type: ignore[return-value]
    peak = [0]
    with ZygotePopen(zygote, argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True) as proc:
        def watch() -> None:
            status = Path(f"/proc/{proc.pid}/status")
            while proc.returncode is None:
                try:
                    hwm = [line for line in status.read_text().splitlines() if line.startswith("VmHWM:")]
                except OSError:
                    return
                if not hwm:  # exiting: its memory is gone
                    return
                peak[0] = max(peak[0], int(hwm[0].split()[1]))
                time.sleep(0.005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        stdout, stderr = proc.communicate(timeout=300)
        watcher.join(timeout=60)
    return proc.returncode, stdout, stderr, peak[0]


def test_a_gzip_bomb_ends_in_bounded_memory_at_the_default_limit(fake, workspace, agent_run_zygote):
    """3 MB on the wire, 3 GiB inflated: at the default 64 MiB limit the run ends with exit 6, and its peak
    RSS stays far below what inflating it would take (6 GiB before the bound)."""
    fake.add(raw(200, bomb(3), headers=GZIP))
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", AGENT_RUN_MAX_RETRIES="0")
    runs_dir = workspace / ".agent-run" / "runs"
    code, stdout, stderr, peak_kib = peak_rss_run(agent_run_zygote, [*agent_run_argv(), "task.md"], workspace, env)
    assert 0 < peak_kib < 300 * 1024, f"peak RSS {peak_kib // 1024} MiB"
    s = ended_with(Result(code, stdout, stderr, runs_dir, sorted(_dirs(runs_dir))), 6, "model_error")
    assert "AGENT_RUN_MAX_RESPONSE_BYTES" in s["reason"]


# --- item 16: a requested wait ---------------------------------------------------------------


def test_a_retry_after_above_the_ceiling_ends_the_run_at_once(fake, agent_run):
    fake.add(error(429, headers={"retry-after-ms": "1000000"}), reply("never asked for"))
    r = agent_run("task.md", timeout=120)  # the old code slept 1,000 s here: the timeout is the hang bound
    s = ended_with(r, 6, "model_error")
    assert "asked to wait 1000 s (HTTP 429)" in s["reason"] and "AGENT_RUN_MAX_RETRY_WAIT_S" in s["reason"]
    assert r.of_type("model_retry") == [] and len(fake.requests) == 1


def test_a_retry_after_beyond_the_run_timeout_ends_the_run_at_once(fake, agent_run):
    fake.add(error(503, headers={"retry-after": "200"}), reply("never asked for"))
    r = agent_run("--timeout", "60", "task.md", timeout=120)
    s = ended_with(r, 6, "model_error")
    assert "asked to wait 200 s (HTTP 503)" in s["reason"] and "run timeout" in s["reason"]
    assert r.of_type("model_retry") == []


def test_every_wait_is_on_stderr_as_it_starts_even_when_quiet(fake, agent_run):
    fake.add(error(429, headers={"retry-after-ms": "30"}), error(503), reply("fine"))
    r = agent_run("-q", "task.md", timeout=120)
    ended_with(r, 0, "success")
    assert "agent-run: model server asked to wait 0.03 s (HTTP 429); retry 1 at " in r.stderr
    assert "model error HTTP 503; retry 2 in " in r.stderr
    assert [e["requested_s"] for e in r.of_type("model_retry")] == [0.03, None]


# --- item 17: stream-json after a retry, a dropped parameter, a token in the base URL --------------


def deltas(stdout: str) -> list[dict]:
    return [line for line in map(json.loads, stdout.splitlines()) if line["type"] in ("text_delta", "text_reset")]


def test_stream_json_does_not_repeat_the_text_of_a_failed_attempt(fake, agent_run):
    fake.add(truncated_stream("The answ"), reply("The answer is 4."))
    r = agent_run("--stream", "--output-format", "stream-json", "task.md", timeout=120)
    ended_with(r, 0, "success")
    lines = deltas(r.stdout)
    assert "".join(d["text"] for d in lines) == "The answer is 4."
    assert [d["type"] for d in lines if d["type"] == "text_reset"] == []


def test_stream_json_resets_when_the_retry_says_something_else(fake, agent_run):
    fake.add(truncated_stream("Hello wor"), reply("Goodbye."))
    r = agent_run("--stream", "--output-format", "stream-json", "task.md", timeout=120)
    ended_with(r, 0, "success")
    lines = deltas(r.stdout)
    assert [d["type"] for d in lines] == ["text_delta", "text_reset", "text_delta"]
    assert lines[1] == {"type": "text_reset", "turn": 1} and lines[2]["text"] == "Goodbye."


def test_a_parameter_the_endpoint_refuses_is_dropped_with_a_warning(fake, agent_run):
    fake.rejects = {"temperature"}
    fake.add(reply("done"))
    r = agent_run("task.md", env={"AGENT_RUN_TEMPERATURE": "0.3"}, timeout=120)
    ended_with(r, 0, "success")
    [warning] = [w for w in r.of_type("warning") if w["code"] == "model_param_dropped"]
    assert "`temperature`" in warning["message"] and "Unrecognized request argument" in warning["message"]
    assert "temperature" in fake.requests[0] and "temperature" not in fake.requests[1]


def test_a_token_in_the_base_url_is_never_shown(workspace, agent_run):
    with socket.socket() as s:  # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://UserTok3nValue:PassTok3nValue@127.0.0.1:{port}/v1?key=QueryTok3nValue"
    r = agent_run("task.md", env={"OPENAI_BASE_URL": url, "AGENT_RUN_MAX_RETRIES": "1"}, timeout=120)
    s = ended_with(r, 6, "model_error")
    assert f"127.0.0.1:{port}" in s["reason"] and "[REDACTED:base-url]" in s["reason"]
    seen = [r.stdout, r.stderr, *(p.read_text(encoding="utf-8", errors="replace")
                                  for p in r.run_dir.rglob("*") if p.is_file())]
    assert not [text for text in seen if "Tok3nValue" in text]

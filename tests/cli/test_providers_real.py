"""Opt-in: a tool-using run against llama-cpp-python's own server with a real model (docs/providers.md).

Skipped unless `AGENT_RUN_TEST_GGUF` names a GGUF file and llama-cpp-python's server is importable by the
interpreter `AGENT_RUN_TEST_LLAMA_PYTHON` names (default: this one), e.g. a venv of its own:

    AGENT_RUN_TEST_GGUF=/path/model.gguf AGENT_RUN_TEST_LLAMA_PYTHON=/path/venv/bin/python \\
        .venv/bin/python -m pytest -n 0 tests/cli/test_providers_real.py

The server is started as a user would (`python -m llama_cpp.server --chat_format chatml-function-calling`, the
format whose replies carry `tool_calls`), on a free loopback port, and stopped after the test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.wait import until

GGUF = os.environ.get("AGENT_RUN_TEST_GGUF", "")
PYTHON = os.environ.get("AGENT_RUN_TEST_LLAMA_PYTHON", sys.executable)
MODEL = "local-gguf"  # the alias the server answers to (--model_alias)


def _server_importable() -> bool:
    if not GGUF or not Path(GGUF).is_file() or not Path(PYTHON).exists():
        return False
    probe = subprocess.run([PYTHON, "-c", "import llama_cpp.server"], capture_output=True, timeout=120)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _server_importable(),
                                reason="set AGENT_RUN_TEST_GGUF to a GGUF file, with llama_cpp.server importable "
                                       "(AGENT_RUN_TEST_LLAMA_PYTHON)")


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [PYTHON, "-m", "llama_cpp.server", "--model", GGUF, "--model_alias", MODEL, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", os.environ.get("N_CTX", "16384"),
         "--chat_format", "chatml-function-calling"],
        stdout=log, stderr=subprocess.STDOUT,
        # PASSIVE: llama.cpp's OpenMP threads sleep instead of spinning beside the runner on a small machine.
        env={**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")})
    try:
        base = f"http://127.0.0.1:{port}/v1"
        until(lambda: proc.poll() is not None or _ready(f"{base}/models"), "the llama-cpp-python server to listen",
              timeout_s=600)
        assert proc.poll() is None, (tmp_path / "server.log").read_text(errors="replace")[-4000:]
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_a_tool_using_run_completes_on_llama_cpp_python(llama_server, workspace, agent_run):
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (workspace / "task.md").write_text("Use the read tool to read notes.txt, then answer: how many lines does it "
                                       "have? Answer with the number only.\n")
    r = agent_run("--model", MODEL, "--max-turns", "8", "--timeout", "900", "task.md",
                  env={"OPENAI_BASE_URL": llama_server, "OPENAI_API_KEY": "none",
                       "AGENT_RUN_TOOL_RESULTS": "user"},  # its format renders no tool message (docs/providers.md)
                  timeout=1200)
    assert r.code == 0, (r.code, r.stderr[-3000:])
    s = r.summary
    assert (s["status"], s["exit_code"]) == ("success", 0)
    assert s["tool_calls"] >= 1
    assert r.of_type("run_finished")[0]["exit_code"] == 0

"""Secrets never land in the run directory (issue 11): the bash environment is an allow-list, and
token-shaped strings and the values of secret-named variables are masked on every log surface,
while the model still receives what the command printed."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

from tests.fakes.openai_server import reply

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AKIA = "AKIA" + "Q3EXAMPLE7KEY2ZZ"
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n"
       "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
       "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
       "-----END RSA PRIVATE KEY-----")
OPENAI_KEY = "sk-live-0123456789abcdefXYZ"
PEM_MARKER = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
MARKERS = (GHP, AKIA, PEM_MARKER, OPENAI_KEY)


def _print_secrets() -> str:
    """Prints every marker, 3,000 numbered lines (so the result is cut and a spill file is kept),
    then the markers again (bash keeps the tail: the model receives the second copy)."""
    echo = f"echo {GHP} {AKIA} {OPENAI_KEY}; printf '%s\\n' {shlex.quote(PEM)}"
    return f"{echo}; seq 1 3000; {echo}"


def _files(run_dir: Path) -> list[Path]:
    return [p for p in run_dir.rglob("*") if p.is_file()]


def _leaks(text: str) -> list[str]:
    return [m[:12] for m in MARKERS if m in text]


def test_bash_does_not_see_the_runners_secrets(fake, workspace, agent_run):
    policy = workspace / "p.jsonc"
    policy.write_text(json.dumps({"extends": "default", "bash": {"env": {"passthrough": ["GITHUB_OUTPUT"]}}}))
    fake.add(reply(calls=[("bash", {"command": "env"})]), reply("done"))
    env = {"GITHUB_PAT": GHP, "RUNNER_APIKEY": "runner-api-key-value-123", "GITHUB_APP_PEM": PEM,
           "GITHUB_ACCESSTOKEN": "access-token-value-123", "GITHUB_ENV": "/tmp/github-env",
           "GITHUB_STEP_SUMMARY": "/tmp/step-summary", "GITHUB_OUTPUT": "/tmp/out",
           "GITHUB_REPOSITORY": "o/r", "RUNNER_OS": "Linux", "MY_BUILD_FLAG": "x"}
    r = agent_run("--policy", str(policy), "--approve", "bash:shell:*", "--sandbox", "off", "task.md", env=env)
    assert r.code == 0, r.stderr
    seen = fake.requests[-1]["messages"][-1]["content"]  # what `env` printed, as the model received it
    names = {line.split("=", 1)[0] for line in seen.splitlines() if "=" in line}
    for hidden in ("GITHUB_PAT", "RUNNER_APIKEY", "GITHUB_APP_PEM", "GITHUB_ACCESSTOKEN", "GITHUB_ENV",
                   "GITHUB_STEP_SUMMARY", "OPENAI_API_KEY", "MY_BUILD_FLAG"):
        assert hidden not in names, hidden
    assert GHP not in seen and "runner-api-key-value-123" not in seen and PEM_MARKER not in seen
    assert {"PATH", "GITHUB_REPOSITORY", "RUNNER_OS", "GITHUB_OUTPUT"} <= names  # CI markers; the policy's name


def test_secrets_are_masked_on_every_log_surface_but_reach_the_model(fake, workspace, agent_run, tmp_path):
    step_summary = tmp_path / "step-summary.md"
    env = {"OPENAI_API_KEY": OPENAI_KEY, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)}
    args = ("--approve", "bash:shell:*", "--sandbox", "off")
    for fmt in ("text", "json", "stream-json"):
        fake.add(reply(calls=[("bash", {"command": _print_secrets()})]), reply(f"done: the key was {GHP}"))
        r = agent_run(*args, "--output-format", fmt, "--junit", f"junit-{fmt}.xml", "task.md", env=env)
        assert r.code == 0, r.stderr
        received = fake.requests[-1]["messages"][-1]["content"]
        assert all(m in received for m in MARKERS), "the model receives what the command printed"
        assert [p.name for p in (r.run_dir / "outputs").iterdir()], "the full output was spilled"
        for path in _files(r.run_dir):
            assert _leaks(path.read_text(encoding="utf-8", errors="replace")) == [], path
        # `::add-mask::VALUE` is how GitHub learns to hide a value in the job log; the runner shows no such line.
        masks = [line for line in r.stderr.splitlines() if line.startswith("::add-mask::")]
        assert f"::add-mask::{OPENAI_KEY}" in masks
        stderr = "\n".join(line for line in r.stderr.splitlines() if line not in masks)
        for surface, text in (("stdout", r.stdout), ("stderr", stderr),
                              ("junit", (workspace / f"junit-{fmt}.xml").read_text()),
                              ("step summary", step_summary.read_text())):
            assert _leaks(text) == [], (fmt, surface)
        result = r.of_type("tool_result")[0]
        assert "[REDACTED:" in result["content"]
        assert result["redacted"]["sha256"] == hashlib.sha256(received.encode()).hexdigest() == result["sha256"]
        assert {"github-token", "aws-access-key", "private-key", "env:OPENAI_API_KEY"} <= set(
            result["redacted"]["kinds"])
        assert r.of_type("tool_call")[0]["redacted"]["kinds"]
        assert [e["redacted"] is not None for e in r.of_type("model_response")] == [True, True]
        assert "[REDACTED:github-token]" in r.summary["answer"]
    assert "[REDACTED:github-token]" in r.stdout  # stream-json: the events, masked


def test_replay_refuses_a_call_whose_recorded_arguments_were_masked(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": f"echo {GHP}"})]), reply("denied"))
    first = agent_run("--sandbox", "off", "task.md")
    assert first.code == 3, first.stderr
    call_id = first.of_type("tool_call")[0]["call_id"]
    again = agent_run("replay", str(first.run_dir), "--call", call_id, "--approve", "--sandbox", "off")
    assert again.code == 2, again.stderr
    assert "[REDACTED:" in again.stderr and call_id in again.stderr
    assert GHP not in again.stderr

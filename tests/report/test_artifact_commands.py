"""The step summary's way to the whole run, followed as a person does it (issue 43, item 3): the artifact fetched
with the printed `gh run download`, or unzipped from a browser download as the printed `unzip` does, into the
checkout's runs directory; then the printed `agent-run` commands run on it: `runs show --transcript`, `--audit`,
`replay` and `resume`."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import zipfile

from tests.fakes.openai_server import reply

NAME = "agent-run-agent-4242-1"

# `gh run download RUN_ID -n NAME -D DIR`: what the GitHub CLI does with one artifact: its files, extracted into DIR.
FAKE_GH = """#!/bin/sh
[ "$1 $2 $3 $4 $5 $6" = "run download 4242 -n {name} -D" ] || {{ echo "gh: unexpected $*" >&2; exit 9; }}
mkdir -p "$7" && cp -R "{store}/." "$7/"
"""


def sh_blocks(markdown: str) -> list[list[str]]:
    return [block.splitlines() for block in re.findall(r"```sh\n(.*?)\n```", markdown, re.S)]


def test_the_printed_commands_work_on_the_downloaded_artifact(fake, workspace, agent_run, tmp_path):
    step_file = tmp_path / "step.md"
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_text("stale\n")
    fake.add(reply("Cleaning up.", calls=[("bash", {"command": "rm -rf build"})]), reply("could not clean"))
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_file), "GITHUB_RUN_ID": "4242",
           "AGENT_RUN_ARTIFACT_NAME": NAME}
    r = agent_run("task.md", env=env)
    assert r.code == 3, r.stderr
    rest = step_file.read_text(encoding="utf-8").split("### The whole run", 1)[1]
    get, unzip, read = sh_blocks(rest)
    # Into the checkout's runs directory: a replay or a resume puts its run directory beside the one it continues
    # (at the checkout's root, the root would be a runs directory, read-only to the replayed command).
    where = f".agent-run/runs/{NAME}"
    assert get == [f"gh run download 4242 -n {NAME} -D {where}"]
    assert unzip == [f"unzip {NAME}.zip -d {where}"]
    assert read == [f"agent-run runs show {where} --transcript", f"agent-run runs show {where} --audit",
                    f"agent-run replay {where} --approve", f"agent-run resume {where}"]

    # The artifact holds the run directory's files at its root (upload-artifact of the one directory); the run's
    # own directory is gone, as on a laptop's checkout.
    store = tmp_path / "artifact"
    shutil.move(r.run_dir, store)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH.format(name=NAME, store=store))
    (bin_dir / "gh").chmod(0o755)
    subprocess.run(["sh", "-c", get[0]], cwd=workspace, check=True, timeout=30,
                   env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    shown = agent_run(*shlex.split(read[0])[1:])
    assert shown.code == 0, shown.stderr
    assert "rm -rf build" in shown.stdout and "could not clean" in shown.stdout
    audit = agent_run(*shlex.split(read[1])[1:])
    assert audit.code == 0 and "rm -rf build" in audit.stdout, audit.stderr
    replayed = agent_run(*shlex.split(read[2])[1:])
    assert replayed.code == 0, replayed.stderr
    assert not (workspace / "build").exists()  # the approved call ran, in a workspace it may write
    fake.restart().add(reply("cleaned now"))
    resumed = agent_run(*shlex.split(read[3])[1:])
    assert resumed.code == 0, resumed.stderr

    # A browser download: NAME.zip, unzipped as printed, is the same directory.
    shutil.rmtree(workspace / where)
    with zipfile.ZipFile(workspace / f"{NAME}.zip", "w") as z:
        for path in sorted(store.rglob("*")):
            z.write(path, path.relative_to(store).as_posix())
    subprocess.run(shlex.split(unzip[0]), cwd=workspace, check=True, timeout=30, capture_output=True)
    again = agent_run(*shlex.split(read[0])[1:])
    assert again.code == 0 and again.stdout == shown.stdout, again.stderr

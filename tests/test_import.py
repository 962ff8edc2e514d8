"""Importing the package has no side effects: no files written, no .env loaded into os.environ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, os, pkgutil, importlib
    before = dict(os.environ)
    import runner
    names = [m.name for m in pkgutil.walk_packages(runner.__path__, "runner.")]
    for name in names:
        importlib.import_module(name)
    after = dict(os.environ)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    print(json.dumps({"modules": names, "changed": changed}))
""")


def test_importing_every_module_is_side_effect_free(tmp_path):
    (tmp_path / ".env").write_text("AGENT_RUN_MODEL=leaked\nOPENAI_API_KEY=sk-leaked\nLEAK_CANARY=1\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_RUN_", "LEAK_"))}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)  # only stops a hang: the import takes a few seconds
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # Guard against a vacuous pass: the walk must actually reach the leaf modules.
    leaves = {"runner.run.assemble", "runner.cli.main", "runner.tools.bash", "runner.policy.load"}
    assert leaves <= set(report["modules"])
    assert report["changed"] == []
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


BOUNDARY = """
import sys
from runner.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in ("openai", "httpx", "pydantic_settings", "runner.run.assemble", "runner.model.openai_chat")
               if m in sys.modules)
print("HEAVY=" + ",".join(heavy))
"""


def test_light_commands_never_import_the_sdk(tmp_path):
    """`--version`, `--help` and `policy explain` load only what they use (lazy subcommands)."""
    for args in (["--version"], ["--help"], ["policy", "explain", "bash", "ls"]):
        proc = subprocess.run([sys.executable, "-c", BOUNDARY, *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=60)
        heavy = proc.stdout.strip().splitlines()[-1]
        assert heavy == "HEAVY=", (args, heavy)


RUN_PATH = """
import sys
import runner.cli.run, runner.run.assemble, runner.sessions.resume
print("BEFORE=" + ",".join(m for m in ("openai", "runner.model.openai_chat") if m in sys.modules))
from runner.model import warm
warm.start().join()
print("AFTER=" + ",".join(m for m in ("openai", "runner.model.openai_chat") if m in sys.modules))
"""


def test_a_runs_path_imports_the_sdk_only_on_its_own_thread(tmp_path):
    """The openai SDK (about a second to import) is not imported with a run's modules: a run starts its import on
    a thread of its own (model/warm.py), beside the policy load, the workspace snapshot and the sandbox probe."""
    proc = subprocess.run([sys.executable, "-c", RUN_PATH], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["BEFORE=", "AFTER=openai,runner.model.openai_chat"]

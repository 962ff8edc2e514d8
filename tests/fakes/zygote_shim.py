"""An `agent-run` executable for a workflow's steps run by the test suite (tests/fakes/actions.py): each invocation is
forked from the pytest worker's zygote (tests/fakes/zygote.py) when it can be, as the `agent_run` fixture's are,
else the real console script is exec'd. A step's script, the action's `exec agent-run`, `$VENV/bin/agent-run
sandbox check`: the real CLI with the real argv, environment, cwd and stdio, without a second of imports each.

`install(zygote, directory)` writes it as `directory/agent-run`, with `directory/python` beside it (a link to this
interpreter), as a venv's console script has: the forked child's sys.executable is that `python`, so what agent-run
starts of itself (a batch's tasks: `Path(sys.executable).parent / "agent-run"`) is this stand-in again, as it would
be the installed agent-run. The stand-in process waits for the forked child, passes SIGINT, SIGTERM and SIGHUP on to
it, and exits with its status, or is killed by the signal that killed it, as the real one would be.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from tests.fakes.zygote import Zygote, ZygotePopen

ROOT = Path(__file__).resolve().parents[2]

SHIM = """#!{python}
import sys
sys.path.insert(0, {root!r})
from tests.fakes.zygote_shim import main
main({config!r})
"""


def install(zygote: Zygote | None, directory: Path, script: str) -> Path:
    """`directory/agent-run`, forking from `zygote` (None: always the real `script`)."""
    directory.mkdir(parents=True, exist_ok=True)
    python = directory / "python"
    if not python.exists():
        python.symlink_to(sys.executable)
    config = directory / "agent-run.zygote.json"
    config.write_text(json.dumps({
        "script": script, "socket": zygote.socket_path if zygote else None, "tmpdir": zygote.tmpdir if zygote else None,
        "env": zygote.env if zygote else {}, "import_env_keys": zygote.import_env_keys if zygote else [],
        "executable": str(python)}))
    shim = directory / "agent-run"
    shim.write_text(SHIM.format(python=sys.executable, root=str(ROOT), config=str(config)))
    shim.chmod(0o755)
    return shim


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    argv = [config["script"], *sys.argv[1:]]
    zygote = Zygote.__new__(Zygote)
    zygote.script, zygote.env, zygote.tmpdir = config["script"], config["env"], config["tmpdir"]
    zygote.socket_path, zygote.import_env_keys = config["socket"], config["import_env_keys"]
    # `--version` imports nothing: started afresh it is cheaper than a fork of everything.
    if (not config["socket"] or not os.path.exists(config["socket"]) or sys.argv[1:] == ["--version"]
            or not zygote.serves(argv, os.environ)):
        os.execv(config["script"], argv)
    child = ZygotePopen(zygote, argv, interpreter=config["executable"])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # what agent-run and its batch pass on
        signal.signal(sig, lambda n, _: child.send_signal(n))
    code = child.wait()
    if code < 0:  # killed by a signal: so is this process, for its parent to see as it would the real one
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code if code >= 0 else 128 - code)

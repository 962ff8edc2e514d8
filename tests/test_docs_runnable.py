"""Docs that are true: every command block in README.md and docs/*.md marked runnable runs here, and its exit
codes and the output it promises are checked (issue 24).

The marker is an HTML comment on the line right before a ```sh fence (GitHub renders neither the comment nor
anything of it):

    <!-- runnable: exit=0 expect="Wrote REPORT.md" -->

- `exit=N`: every command line of the block exits N; `exit=2,0,3`: one code per command line, in order.
- `expect="TEXT"` (repeatable; TEXT holds no `"`; the comment may go on over several lines): the block's
  output — stdout and stderr of all its lines — contains TEXT.
- `setup=NAME`: where the block runs (SETUPS below). Default `repo`: a temp copy of the checkout's examples/
  and policies/, the working directory its root, as a reader runs README's commands from a clone.
  `hello-run`: a copy of examples/hello holding one recorded run, `<run_id>` (setup_hello_run says which).
- `skip-install`: the block's `python3 -m venv …` and `… pip install …` steps are not run (tests/test_release.py
  installs for real); `.venv/bin/agent-run` is the agent-run under test.

Each line is one command (a trailing backslash continues it; a `# comment` is the shell's), run in order in one
directory, a `cd` carrying on to later lines as in a terminal. Commands get no key and no model endpoint
(OPENAI_* and AGENT_RUN_* are cleared), so a block that needs a real provider cannot be marked. A block's files
are copies in a temp directory (one per setup, shared by the module's blocks): the checkout is never written.
Unmarked blocks (installs, real providers, syntax summaries) are not run.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.zygote import Zygote

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- runnable:(?P<attrs>.*?)-->\n(?P<fence>```(?P<lang>\w*)\n(?P<body>.*?)^```)?",
                    re.S | re.M)
ATTR = re.compile(r'\s*(?:exit=(?P<exit>\d+(?:,\d+)*)|expect="(?P<expect>[^"]*)"|setup=(?P<setup>[\w-]+)'
                  r"|(?P<flag>skip-install))")
TIMEOUT = 120  # only stops a hang: a block's line takes well under a second


@dataclass(frozen=True)
class Block:
    where: str  # README.md:20, the fence's line
    commands: tuple[str, ...]
    exits: tuple[int, ...]
    expect: tuple[str, ...]
    setup: str
    skip_install: bool


def parse_attrs(where: str, attrs: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"exit": [], "expect": [], "setup": [], "flag": []}
    pos, text = 0, attrs.rstrip()
    while pos < len(text):
        m = ATTR.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"{where}: cannot read the runnable marker at {text[pos:]!r}")
        for key, value in m.groupdict().items():
            if value is not None:
                found[key].append(value)
        pos = m.end()
    return found


def commands_of(body: str) -> tuple[str, ...]:
    """The block's command lines: continuations joined, blank and comment-only lines dropped."""
    lines = body.replace("\\\n", " ").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def blocks() -> list[Block]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in MARKER.finditer(text):
            where = f"{doc.relative_to(ROOT)}:{text[:m.start('fence') if m['fence'] else m.start()].count(chr(10)) + 1}"
            if m["fence"] is None or m["lang"] not in ("sh", "bash", "console"):
                raise ValueError(f"{where}: a runnable marker must be the line right before a ```sh fence")
            attrs = parse_attrs(where, m["attrs"])
            commands = commands_of(m["body"])
            exits = tuple(int(c) for c in ",".join(attrs["exit"] or ["0"]).split(","))
            if len(exits) == 1:
                exits *= len(commands)
            if len(exits) != len(commands) or len(attrs["setup"]) > 1:
                raise ValueError(f"{where}: {len(commands)} command line(s) but exit={','.join(map(str, exits))}")
            found.append(Block(where, commands, exits, tuple(attrs["expect"]), (attrs["setup"] or ["repo"])[0],
                               "skip-install" in attrs["flag"]))
    return found


BLOCKS = blocks()

# --------------------------------------------------------------------------------------------------
# Setups: where a block runs. Each is made once per module (per xdist worker) and shared by its blocks.


def _copy_example(target: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "hello", target, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md"))
    return target


def setup_repo(tmp: Path, run: Callable[[list[str], Path], subprocess.CompletedProcess[str]]) -> tuple[Path, str]:
    """README's commands from a clone's root: examples/ and policies/ as in the checkout."""
    root = tmp / "repo"
    root.mkdir()
    _copy_example(root / "examples" / "hello")
    shutil.copytree(ROOT / "policies", root / "policies")
    return root, ""


MINE = """{
  "permission": { "rules": [
    { "domain": "read", "pattern": "workspace:**", "decision": "alow" },
  ] },
}
"""


def setup_hello_run(tmp: Path, run: Callable[[list[str], Path], subprocess.CompletedProcess[str]]) -> tuple[Path, str]:
    """examples/hello as the workspace, with one run of its recording under the shipped `default` policy — its
    `wc -l` asks there, so the run was denied once (exit 3) — as `<run_id>`; and policies/mine.jsonc, a
    policy of the reader's own with a typo (`alow`)."""
    ws = _copy_example(tmp / "hello")
    (ws / "policies").mkdir()
    (ws / "policies" / "mine.jsonc").write_text(MINE, encoding="utf-8")
    proc = run(["agent-run", "--policy", "default", "--model", "replay:recording", "task.md"], ws)
    assert proc.returncode == 3, proc.stderr
    (run_dir,) = (ws / ".agent-run" / "runs").iterdir()
    return ws, run_dir.name


SETUPS = {"repo": setup_repo, "hello-run": setup_hello_run}

# --------------------------------------------------------------------------------------------------


class Shell:
    """Runs a block's lines: `agent-run` (forked from the worker's zygote when it can be), other programs
    directly, `cd` in-process; a line with pipes or redirections goes to bash with the same PATH."""

    def __init__(self, zygote: Zygote | None) -> None:
        self.zygote = zygote
        self.argv = agent_run_argv()
        self.env = clean_env()
        self.env["PATH"] = f"{Path(self.argv[0]).parent}:{self.env.get('PATH', '/usr/bin:/bin')}"

    def run(self, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        if argv[0] == "agent-run" or argv[0].endswith("/bin/agent-run"):
            argv = [*self.argv, *argv[1:]]
        start = subprocess.run
        if self.zygote is not None and self.zygote.serves(argv, self.env):
            start = self.zygote.run
        return start(argv, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                     timeout=TIMEOUT)

    def line(self, line: str, cwd: Path, skip_install: bool) -> tuple[int, str, Path]:
        """One command line: its exit code, its output, and the directory the next line runs in."""
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        if any(t != "&&" and t and set(t) <= set("();<>|&") for t in tokens):
            proc = subprocess.run(["bash", "-c", line], cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            return proc.returncode, proc.stdout + proc.stderr, cwd
        out = ""
        for argv in _split(tokens):
            if skip_install and _installs(argv):
                continue
            if argv[0] == "cd":
                cwd = (cwd / argv[1]).resolve()
                continue
            proc = self.run(argv, cwd)
            out += proc.stdout + proc.stderr
            if proc.returncode != 0:
                return proc.returncode, out, cwd
        return 0, out, cwd


def _split(tokens: list[str]) -> Iterator[list[str]]:
    argv: list[str] = []
    for token in [*tokens, "&&"]:
        if token == "&&":
            if argv:
                yield argv
            argv = []
        else:
            argv.append(token)


def _installs(argv: list[str]) -> bool:
    return argv[1:3] == ["-m", "venv"] or (Path(argv[0]).name.startswith("pip") and "install" in argv)


@pytest.fixture(scope="module")
def shell(agent_run_zygote: Zygote | None) -> Shell:
    return Shell(agent_run_zygote)


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory, shell: Shell) -> Callable[[str], tuple[Path, str]]:
    made: dict[str, tuple[Path, str]] = {}

    def get(name: str) -> tuple[Path, str]:
        if name not in made:
            made[name] = SETUPS[name](tmp_path_factory.mktemp(name), shell.run)
        return made[name]

    return get


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_a_runnable_block_does_what_the_doc_shows(block: Block, shell: Shell, places) -> None:
    cwd, run_id = places(block.setup)
    output = ""
    for command, expected in zip(block.commands, block.exits, strict=True):
        code, out, cwd = shell.line(command.replace("<run_id>", run_id), cwd, block.skip_install)
        output += out
        assert code == expected, f"{block.where}: `{command}` exited {code}, the doc says {expected}:\n{out}"
    for text in block.expect:
        assert text in output, f"{block.where}: the output does not contain {text!r}:\n{output}"


def test_the_marker_convention_holds() -> None:
    """Every marker is read (a typo in one is an error, not a skipped block); every setup named exists; the
    blocks README promises run offline are marked."""
    assert {b.setup for b in BLOCKS} <= set(SETUPS)
    readme = [b for b in BLOCKS if b.where.startswith("README.md:")]
    assert any("--model replay:" in c for b in readme for c in b.commands), "the Quickstart run is not marked"
    assert any(c.startswith("agent-run policy check") for b in readme for c in b.commands)
    with pytest.raises(ValueError, match="cannot read"):
        parse_attrs("x.md:1", ' exit=0 expct="typo"')
    assert commands_of("# a comment\nagent-run a \\\n  b   # note\n\n") == ("agent-run a    b   # note",)

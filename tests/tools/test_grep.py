from __future__ import annotations

import os
import random
import re
import shutil
import time

import pytest

from runner.engine.cancel import RunCancel
from runner.tools import grep as grep_module
from runner.tools.base import ToolContext, ToolError
from runner.tools.grep import MAX_MATCHES, Grep


@pytest.fixture(autouse=True, params=["python", "rg"])
def engine(request, monkeypatch) -> str:
    """Every test with ripgrep as a prefilter too, where it is installed, and without it."""
    if request.param == "rg":
        if shutil.which("rg") is None:
            request.getfixturevalue("ripgrep_installed")
        if shutil.which("rg") is None:
            pytest.skip("ripgrep is not installed")
    else:
        monkeypatch.setattr(grep_module.shutil, "which", lambda name: None)
    return request.param


@pytest.fixture
def tree(ws):
    files = {
        "a.py": "import os\nneedle = 1\n",
        "src/b.py": "x\ny\nneedle()\n",
        "src/notes.md": "a needle in markdown\n",
        ".git/config": "needle in git\n",
        "vendor/.git/HEAD": "needle\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (ws / "blob.bin").write_bytes(b"\x00\x01needle")
    return ws


def test_matches_with_path_and_line(ctx, tree):
    out = Grep().run({"pattern": "needle"}, ctx)
    # .git directories and binary files are skipped.
    assert out.content.splitlines() == [
        "a.py:2: needle = 1", "src/b.py:3: needle()", "src/notes.md:1: a needle in markdown",
    ]
    assert out.details["matches"] == 3


def test_include_filters_files(ctx, tree):
    out = Grep().run({"pattern": "needle", "include": "**/*.py"}, ctx)
    assert out.content.splitlines() == ["a.py:2: needle = 1", "src/b.py:3: needle()"]


def test_regex_syntax(ctx, tree):
    assert Grep().run({"pattern": r"^needle\(\)$"}, ctx).content == "src/b.py:3: needle()"


def test_single_file_path(ctx, tree):
    assert Grep().run({"pattern": "needle", "path": "src/notes.md"}, ctx).content == (
        "src/notes.md:1: a needle in markdown")


def test_no_matches(ctx, tree):
    # It says what it searched (issue 44): a small model takes a bare "no matches" for "no such thing".
    assert Grep().run({"pattern": "haystack"}, ctx).content == "[no matches for `haystack` in 4 files under `.`]"
    assert Grep().run({"pattern": "haystack", "path": "src", "include": "*.md"}, ctx).content == (
        "[no matches for `haystack` in 1 file under `src`, include `*.md`]")


def test_invalid_regex(ctx, tree):
    with pytest.raises(ToolError) as info:
        Grep().run({"pattern": "("}, ctx)
    assert info.value.type == "InvalidArguments"
    assert info.value.message.startswith("invalid regex:")


def test_missing_path(ctx, tree):
    with pytest.raises(ToolError) as info:
        Grep().run({"pattern": "x", "path": "nope"}, ctx)
    assert info.value.type == "IOError"


def test_match_cap(ctx, ws):
    extra = 37
    (ws / "many.txt").write_text("hit\n" * (MAX_MATCHES + extra))
    out = Grep().run({"pattern": "hit"}, ctx)
    lines = out.content.splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[MAX_MATCHES - 1] == f"many.txt:{MAX_MATCHES}: hit"
    assert lines[-1] == f"[{extra} more matches not shown; narrow the pattern or path]"
    assert out.details["matches"] == MAX_MATCHES + extra


def test_a_fifo_is_skipped_and_counted(ctx, ws, engine):
    (ws / "a.txt").write_text("hit\n")
    os.mkfifo(ws / "pipe")
    out = Grep().run({"pattern": "hit"}, ctx)
    if engine == "rg":  # rg never lists it: nothing to say
        assert out.content == "a.txt:1: hit"
        return
    assert out.content == "a.txt:1: hit\n[1 file skipped: not a regular file (FIFO, socket or device)]"
    assert out.details["not_searched"] == {"not_regular": 1}


def test_a_fifo_named_by_path_is_an_error(ctx, ws):
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError) as info:
        Grep().run({"pattern": "x", "path": "pipe"}, ctx)
    assert info.value.type == "IOError" and "not a regular file" in info.value.message


def test_a_file_too_large_is_skipped_and_said(ctx, ws, monkeypatch):
    monkeypatch.setattr(grep_module, "MAX_FILE_BYTES", 10)
    (ws / "big.txt").write_text("hit\n" * 10)
    (ws / "small.txt").write_text("hit\n")
    out = Grep().run({"pattern": "hit"}, ctx)
    assert out.content.splitlines() == ["small.txt:1: hit", "[1 file over 0 MiB skipped; read them with offset/limit]"]


@pytest.mark.parametrize("stop", ["deadline", "abort"])
def test_the_run_ending_stops_the_walk(ws, stop):
    for i in range(5):
        (ws / f"f{i}.txt").write_text("hit\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(deadline=time.monotonic() - 1 if stop == "deadline" else None))
    if stop == "abort":
        ctx.cancel.stop()
    out = Grep().run({"pattern": "hit"}, ctx)
    why = "the run's time is up" if stop == "deadline" else "the run is stopping"
    assert out.content == (f"[no matches for `hit` in 0 files under `.`]\n"
                           f"[search stopped after 0 files: {why}; narrow path or include]")
    assert out.details["stopped"] == why


def test_per_call_caps_on_files_and_bytes(ctx, ws, monkeypatch):
    for i in range(5):
        (ws / f"f{i}.txt").write_text("hit\n")
    monkeypatch.setattr(grep_module, "MAX_SCAN_FILES", 2)
    out = Grep().run({"pattern": "hit"}, ctx)
    assert out.content == ("f0.txt:1: hit\nf1.txt:1: hit\n"
                           "[search stopped after 2 files: the limit of 2 files per call was reached; "
                           "narrow path or include]")
    monkeypatch.setattr(grep_module, "MAX_SCAN_FILES", 100)
    monkeypatch.setattr(grep_module, "MAX_SCAN_BYTES", 9)  # stops once 9 bytes are read: after 3 files
    out = Grep().run({"pattern": "hit"}, ctx)
    assert out.details["files"] == 3 and out.details["bytes_searched"] == 12
    assert "the limit of 0 MiB read per call was reached" in out.content


def test_a_name_that_is_not_utf8_is_shown_escaped(ctx, ws):
    with open(os.path.join(os.fsencode(ws), b"caf\xe9.txt"), "wb") as f:
        f.write(b"hit\n")
    assert Grep().run({"pattern": "hit"}, ctx).content == "caf\\xe9.txt:1: hit"


def test_the_walk_yields_in_sorted_order(ctx, ws):
    for rel in ("z.txt", "a/x.txt", "a.txt", "a-b.txt", "a/b/c.txt", "B.txt"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("hit\n")
    lines = Grep().run({"pattern": "hit"}, ctx).content.splitlines()
    assert lines == sorted(lines)


PIECES = ["a", "ab", "b", " ", "\n", "\r\n", "\r", "\x0c", "é", "x1", "foo", "bar", "\t"]
PATTERNS = [r"^a", r"b$", r"^$", r"a\s*$", r"\bab\b", r"^\s", r"foo\s+bar", r"[^a]$", r"a|^b", r"(?i)FOO",
            r"\d$", r"^(a|b)+$", r"a\Z", r"(?<!a)b", r"a(?=\s)", r"b(?!a)", r"\Aab", r"(?s)a.b", r"[\s\S]b",
            r"(?m)^b", r"a++", r"(?>a+)b", r"\W$"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_searching_the_whole_file_first_finds_what_each_line_would(ctx, ws, pattern):
    rx = re.compile(pattern)
    rng = random.Random(pattern)
    for case in range(150):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 10)))
        (ws / "f.txt").write_text(text, encoding="utf-8", newline="")
        expected = [f"f.txt:{n}: {line}" for n, line in enumerate(text.splitlines(), start=1) if rx.search(line)]
        out = Grep().run({"pattern": pattern}, ctx).content
        assert out == ("\n".join(expected) or f"[no matches for `{pattern}` in 1 file under `.`]"), (case, text)


def test_ripgrep_only_narrows_what_is_searched(ctx, ws, engine):
    """What rg reports is still walked, ignored and decided here: a symlinked folder rg follows, an ignored
    file, .git, a file matching only in rg's sense (ignoring case) are not results."""
    (ws / ".gitignore").write_text("ignored.txt\n")
    for rel, text in {"a.txt": "needle\n", "ignored.txt": "needle\n", ".git/x": "needle\n", "d/b.txt": "needle\n",
                      "c.txt": "NEEDLE\n", "e.txt": "pre needle post\n"}.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (ws / "link").symlink_to("d")
    out = Grep().run({"pattern": r"needle\b"}, ctx)
    assert out.content.splitlines() == ["a.txt:1: needle", "d/b.txt:1: needle", "e.txt:1: pre needle post"]


def test_a_symlinked_file_is_searched(ctx, ws, engine):
    (ws / "d").mkdir()
    (ws / "d" / "real.txt").write_text("needle\n")
    (ws / "alias.txt").symlink_to("d/real.txt")
    out = Grep().run({"pattern": "needle"}, ctx)
    assert out.content.splitlines() == ["alias.txt:1: needle", "d/real.txt:1: needle"]


class _BrokenSandbox:
    """A sandbox that cannot start the prefilter: exits 1 (rg's "no match") and says why on stderr, as bwrap does."""

    active = True

    def wrap(self, argv, env):
        return ["sh", "-c", "echo 'bwrap: execvp rg: No such file or directory' >&2; exit 1"], env


def test_a_prefilter_the_sandbox_could_not_start_is_not_taken_for_no_match(ctx, tree):
    ctx.sandbox = _BrokenSandbox()
    assert Grep().run({"pattern": "needle"}, ctx).details["matches"] == 3


def test_output_mode_files_and_count(ctx, tree):
    """Issue 34 item 4: files-only and per-file counts waste no context on the lines themselves."""
    (tree / "src" / "c.py").write_text("needle\nneedle\nneedle\n")
    files = Grep().run({"pattern": "needle", "output_mode": "files"}, ctx)
    assert files.content.splitlines() == ["a.py", "src/b.py", "src/c.py", "src/notes.md"]
    assert files.details["files_matched"] == 4 and "matches" not in files.details
    count = Grep().run({"pattern": "needle", "output_mode": "count"}, ctx)
    assert count.content.splitlines() == ["a.py:1", "src/b.py:1", "src/c.py:3", "src/notes.md:1",
                                          "[6 matching lines in 4 files]"]
    assert count.details["matches"] == 6 and count.details["output_mode"] == "count"


def test_limit_caps_the_results_of_every_mode(ctx, tree):
    lines = Grep().run({"pattern": "needle", "limit": 2}, ctx)
    assert lines.content.splitlines() == ["a.py:2: needle = 1", "src/b.py:3: needle()",
                                          "[1 more matches not shown; narrow the pattern or path]"]
    files = Grep().run({"pattern": "needle", "output_mode": "files", "limit": 1}, ctx)
    assert files.content.splitlines() == ["a.py", "[2 more files not shown; narrow the pattern or path]"]
    most = Grep().run({"pattern": "needle", "limit": 10 * MAX_MATCHES}, ctx)
    assert most.details["matches"] == 3  # a limit above the ceiling is the ceiling

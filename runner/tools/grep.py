from __future__ import annotations

import os
import re
import re._constants as sre_constants
import re._parser as sre_parse
import shutil
import stat
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import regex

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Cancelled, Tool, ToolContext, ToolError, ToolOutput
from runner.tools.env import scrubbed_env
from runner.tools.ignore import IgnoreMatcher, iter_files
from runner.tools.process import reader, run_process
from runner.tools.readable import Readable
from runner.tools.truncate import positive
from runner.workspace.gitconfig import seen_as

MAX_MATCHES = 500  # results shown: the default and the ceiling of `limit`
MODES = ("content", "files", "count")  # output_mode: matching lines; files with a match; matches per file
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 16 * 1024 * 1024
# Per call: a search of a huge tree stops here (and says so) rather than running on for minutes.
MAX_SCAN_FILES = 50_000
MAX_SCAN_BYTES = 256 * 1024 * 1024
# The first slice of matching one search gets before the run's Cancel is asked again. The `regex` module's timeout
# counts the process's CPU seconds (every thread's), not the wall clock: it only bounds a slice, and the Cancel's
# monotonic deadline is what ends the call.
SLICE_S = 0.25


class Grep(Tool):
    name = "grep"
    domain = "read"
    risk = "low"
    aliases = ("Grep",)
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        "Python regex in files under path (default '.'; include: path glob; binary/gitignored skipped "
        f"unless named); count is per file; limit ≤{MAX_MATCHES}."
    )
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string"},
            "include": {"type": "string"},
            "output_mode": {"type": "string", "enum": list(MODES)},
            "limit": {"type": "integer"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args.get("path", "."))

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            rx = re.compile(args["pattern"])
        except re.error as exc:
            raise ToolError("InvalidArguments", f"invalid regex: {exc}") from None
        root = paths.resolve(ctx, args.get("path", "."))
        shown = paths.display(ctx, root)
        try:
            mode = root.stat().st_mode
        except OSError:
            raise ToolError("IOError", f"{shown} does not exist") from None
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise ToolError("IOError", f"{shown} is not a regular file (a FIFO, socket or device); not searched")
        # A file named by path is searched even if ignored: it was asked for. Paths as strings: this loop
        # runs once per file of what may be a very large tree.
        top = str(root)
        files = iter([top]) if stat.S_ISREG(mode) else (
            os.path.join(top, n) for n in iter_files(root, args.get("include") or "**",
                                                     IgnoreMatcher(ctx.workspace, ctx.cancel)))
        search = Search(rx, ctx, args.get("output_mode") or "content",
                        min(positive(args.get("limit")) or MAX_MATCHES, MAX_MATCHES))
        # With ripgrep installed, the files that cannot match are told apart at its speed: only the others
        # are decided and read here. (None: every file is.)
        candidates = None if stat.S_ISREG(mode) else _rg_candidates(top, rx, ctx)
        readable = Readable(ctx)
        try:
            # The walk asks the run's Cancel at every directory, the scan at every file and line, and a search of a
            # line between slices: `(a+)+$` on a line of thirty a's and a b backtracks for hours inside one search.
            self._scan(files, candidates, top, root, readable, search)
        except Cancelled as stopped:
            search.stop = stopped.why
        text = "\n".join(search.hits) or _nothing(args, search.files + search.ruled_out, shown)
        if search.results > len(search.hits):
            more = "matches" if search.mode == "content" else "files"
            text += f"\n[{search.results - len(search.hits)} more {more} not shown; narrow the pattern or path]"
        if search.mode == "count" and search.hits:
            text += f"\n[{search.total} matching lines in {search.matched} files]"
        notes = [*search.notes(), readable.note("file", "files")]
        text = "\n".join(filter(None, [text, *notes]))
        # `matches`: matching lines (files mode stops at a file's first: not counted there).
        details = {**({} if search.mode == "files" else {"matches": search.total}), "files": search.files,
                   "files_matched": search.matched, **readable.details(), **search.details()}
        if search.mode != "content":
            details["output_mode"] = search.mode
        return ToolOutput(text, details)

    @staticmethod
    def _scan(files: Iterator[str], candidates: set[str] | None, top: str, root: Path, readable: Readable,
              search: Search) -> None:
        for file in files:
            if search.stopped():
                break
            # rg does not follow symlinks (one to / would have it search the machine): a linked file is searched.
            if candidates is not None and file not in candidates and not os.path.islink(file):
                search.ruled_out += 1
                continue
            real = readable.real(file)
            if real is None:
                continue
            walked = str(real) == file  # no symlink on the way
            # A symlink leading out of root would be a read the policy never decided: not searched.
            if not (walked or file == top or real.is_relative_to(root)):
                continue
            if readable.allows(real, walked=walked):
                search.file(real, file)


class Search:
    """One call's scan: matches, and the files and bytes it read, within the call's limits and the
    run's deadline. Files are read whole (each at most MAX_FILE_BYTES) but searched line by line only
    when the pattern occurs in them at all."""

    def __init__(self, rx: re.Pattern[str], ctx: ToolContext, mode: str = "content", limit: int = MAX_MATCHES) -> None:
        if mode not in MODES:
            raise ToolError("InvalidArguments", f"output_mode must be one of {', '.join(MODES)}, not {mode!r}")
        # Matched with the `regex` module (re's semantics, its V0), which takes a timeout and releases the GIL: `re`
        # cannot be stopped inside a search, and its backtracking holds the GIL (one pattern would freeze every
        # thread of the run past --timeout and signals).
        self.rx = _stoppable(rx)
        whole = _whole_text(rx)
        self.whole = _stoppable(whole) if whole is not None else None
        self.ctx = ctx
        self.mode = mode
        self.limit = limit
        self.hits: list[str] = []
        self.total = 0  # matching lines
        self.matched = 0  # files with a match
        self.files = 0  # files read
        self.ruled_out = 0  # files ripgrep showed cannot match: searched, not read
        self.bytes = 0
        self.skipped: Counter[str] = Counter()  # reason -> files not searched
        self.stop: str | None = None  # why the scan ended early

    def stopped(self) -> bool:
        if self.stop is None:
            self.stop = self.ctx.cancel.why()
            if self.stop is None and self.files >= MAX_SCAN_FILES:
                self.stop = f"the limit of {MAX_SCAN_FILES} files per call was reached"
            elif self.stop is None and self.bytes >= MAX_SCAN_BYTES:
                self.stop = f"the limit of {MAX_SCAN_BYTES // (1024 * 1024)} MiB read per call was reached"
        return self.stop is not None

    def file(self, real: Path, walked: str) -> None:
        """Search `real`; matches are shown as `walked` (the path as the walk met it) is."""
        data = self._read(real)
        if data is None:
            return
        data = seen_as(real, data)  # a repository's config without its credentials (issue 25)
        self.files += 1
        self.bytes += len(data)
        if b"\x00" in data[:8192]:
            return
        text = data.decode("utf-8", errors="replace")
        if self.whole is not None and not self._prefilter(self.whole, _LINE_BREAKS.sub("\n", text)):
            return
        shown = None
        count = 0
        for number, line in enumerate(text.splitlines(), start=1):
            if self._search(self.rx, line):
                count += 1
                if self.mode == "files":
                    break  # one match names the file
                if self.mode == "content" and len(self.hits) < self.limit:
                    shown = shown or paths.display(self.ctx, Path(walked))
                    self.hits.append(f"{shown}:{number}: {line[:MAX_LINE_CHARS]}")
        self.total += count
        if count:
            self.matched += 1
            if self.mode != "content" and len(self.hits) < self.limit:
                shown = paths.display(self.ctx, Path(walked))
                self.hits.append(shown if self.mode == "files" else f"{shown}:{count}")

    def _search(self, rx: Any, text: str) -> Any:
        """rx.search(text), with the GIL released, in slices of CPU time with the run's Cancel asked before each
        (Cancelled when it says stop). A search cannot resume where a slice ended: one that needs more starts again
        with twice the slice, which bounds the work lost to what the search needs."""
        cancel = self.ctx.cancel
        slice_s = SLICE_S
        while True:
            cancel.check()
            left = cancel.remaining()
            try:
                return rx.search(text, timeout=slice_s if left is None else _within(left, slice_s), concurrent=True)
            except TimeoutError:
                slice_s *= 2

    def _prefilter(self, whole: Any, text: str) -> bool:
        """Whether the whole file may hold a match (one search over it, instead of one per line); True when that
        search is slower than a slice: then each line is searched, between which the Cancel is asked."""
        self.ctx.cancel.check()
        left = self.ctx.cancel.remaining()
        try:
            return bool(whole.search(text, timeout=SLICE_S if left is None else _within(left, SLICE_S),
                                     concurrent=True))
        except TimeoutError:
            return True

    @property
    def results(self) -> int:
        """What `limit` counts: matching lines, or files."""
        return self.total if self.mode == "content" else self.matched

    def _read(self, real: Path) -> bytes | None:
        """The file's bytes; None (counted) for what is not a regular file or is too large. Never
        blocks: a FIFO is refused before it is opened, and opened without waiting for a writer if it
        became one since."""
        try:
            st = os.stat(real)
            if not stat.S_ISREG(st.st_mode):
                self.skipped[NOT_REGULAR] += 1
                return None
            if st.st_size > MAX_FILE_BYTES:
                self.skipped[TOO_LARGE] += 1
                return None
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        with open(fd, "rb", buffering=0) as f:
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    self.skipped[NOT_REGULAR] += 1
                    return None
                # Sized to the file (a buffer of MAX_FILE_BYTES per small file would cost more than its read).
                return f.read(min(st.st_size, MAX_FILE_BYTES) + 1)[:MAX_FILE_BYTES]
            except OSError:
                return None

    def notes(self) -> list[str]:
        out = []
        if n := self.skipped[NOT_REGULAR]:
            out.append(f"[{n} {'file' if n == 1 else 'files'} skipped: not a regular file (FIFO, socket or device)]")
        if n := self.skipped[TOO_LARGE]:
            out.append(f"[{n} {'file' if n == 1 else 'files'} over {MAX_FILE_BYTES // (1024 * 1024)} MiB skipped; "
                       "read them with offset/limit]")
        if self.stop is not None:
            out.append(f"[search stopped after {self.files} files: {self.stop}; narrow path or include]")
        return out

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.stop is not None:
            out.update(stopped=self.stop, bytes_searched=self.bytes)
        if sum(self.skipped.values()):
            out["not_searched"] = dict(self.skipped)
        return out


NOT_REGULAR, TOO_LARGE = "not_regular", "too_large"
# What str.splitlines() splits on besides \n: made \n for the whole-text search, so `^` and `$` see them.
_LINE_BREAKS = re.compile("\r\n?|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# What may match a line alone but not the same line inside the whole text: lookarounds and anchors that
# see past the line's end, atomic groups and possessive quantifiers that may swallow a newline.
_LINE_BOUND = re.compile(r"\\[AZ]|\(\?[=!<>(]|[*+?}]\+")


def _within(left: float, slice_s: float) -> float:
    """A slice's CPU seconds with `left` wall seconds to go: a quarter of them at most (a loaded machine runs a CPU
    second in several wall seconds, and the call must end near its deadline), SLICE_S near the end."""
    return max(min(left, max(SLICE_S, min(slice_s, left / 4))), 0.001)


def _stoppable(rx: re.Pattern[str]) -> Any:
    """`rx` for the `regex` module, which takes a timeout and releases the GIL while it matches (re does neither)."""
    return regex.compile(rx.pattern, rx.flags & ~re.UNICODE | regex.VERSION0)


def _whole_text(rx: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern for one search over a whole file (lines made \\n-separated, `^`/`$` at each line),
    which finds something whenever a line alone would: a file it misses has no matching line. None
    when the pattern may behave otherwise (each line is then searched)."""
    if _LINE_BOUND.search(rx.pattern):
        return None
    try:
        return re.compile(rx.pattern, rx.flags | re.MULTILINE)
    except re.error:
        return None


def _required_text(rx: re.Pattern[str]) -> str | None:
    """Text every match of `rx` contains: the longest run of plain characters at the pattern's top level
    (`needle` in `def needle\\(`). None when there is none to be sure of (alternatives, ignoring case)."""
    if rx.flags & re.IGNORECASE:
        return None
    try:
        parsed = list(sre_parse.parse(rx.pattern, rx.flags))
    except Exception:  # a private parser: whatever it raises, the answer is only "not known"
        return None
    best = run = ""
    for op, arg in parsed:
        if op is sre_constants.LITERAL:
            run += chr(arg)
            continue
        best, run = max(best, run, key=len), ""
    best = max(best, run, key=len)
    # A match never spans lines, nor holds what decoding puts for bytes that are not UTF-8.
    return best if best and not _LINE_BREAKS.search(best) and "\n" not in best and "\ufffd" not in best else None


def _rg_candidates(top: str, rx: re.Pattern[str], ctx: ToolContext) -> set[str] | None:
    """The files below `top` holding the pattern's required text, as ripgrep finds them (paths spelled as
    the walk spells them); None when rg is not installed, the pattern has no such text, or rg fails.

    A prefilter only: every file is still walked, ignored, decided and searched here, with Python's regex;
    rg is told to skip nothing the walk keeps (ignore files, hidden and binary files); it does not follow
    symlinks, so the caller searches a linked file whatever rg says."""
    rg = shutil.which("rg")
    needle = _required_text(rx)
    if rg is None or needle is None:
        return None
    argv = [rg, "--files-with-matches", "--null", "--fixed-strings", "--case-sensitive", "--text", "--no-config",
            "--no-ignore", "--hidden", "--encoding", "none", "--no-messages",
            "--glob", "!.git/", "--glob", "!.agent-run/", "--regexp", needle, "--", top]
    # Like every process the runner starts: the scrubbed environment, inside the run's sandbox. Inside it only
    # the workspace is sure to be visible, so a search elsewhere is left to the walk alone.
    env = scrubbed_env(os.environ)
    if ctx.sandbox is not None and ctx.sandbox.active:
        if not Path(top).resolve().is_relative_to(ctx.workspace):
            return None
        argv, env = ctx.sandbox.wrap(argv, env)
    out, err = bytearray(), bytearray()
    try:
        ended = run_process(ctx.cancel, argv, pumps=(reader(out.extend), reader(err.extend, "stderr")),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError:
        return None
    if not ended.exited:
        return set()  # the walk stops at its first file: the run is ending
    # 1 is rg's "no file holds it" — and also what bwrap exits with when it cannot start rg at all, which says so
    # on stderr (rg itself is --no-messages): then the walk decides, never an empty answer.
    if ended.returncode not in (0, 1) or err.strip():
        return None
    return {os.fsdecode(p) for p in bytes(out).split(b"\0") if p}


def _nothing(args: dict[str, Any], files: int, shown: str) -> str:
    """An empty search says what it searched: a small model otherwise takes "no matches" for "no such thing"
    without seeing that its path or include was wrong (issue 44)."""
    include = f", include `{args['include']}`" if args.get("include") else ""
    return f"[no matches for `{args['pattern']}` in {files} file{'' if files == 1 else 's'} under `{shown}`{include}]"

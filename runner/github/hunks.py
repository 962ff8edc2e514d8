"""Which lines of a pull request a review comment may sit on: GitHub accepts an inline comment only on a line the
diff shows, and a comment spanning lines only when they are all in one hunk. Pure functions of the `patch` each
file of `GET /repos/{o}/{r}/pulls/{n}/files` carries (a unified diff without the file headers).

Only the RIGHT side (the pull request's version of the file) is used: a finding names lines of the code the agent
read, which is the new version. A hunk's RIGHT lines are its added (`+`) and context (` `) lines, numbered from the
`+c` of its header; a deleted (`-`) line has none. The lines are counted as the patch shows them, never past the
header's count, so a patch cut short (GitHub cuts very large ones) offers only what it shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")

Range = tuple[int, int]  # first and last RIGHT-side line of a hunk, inclusive


def right_ranges(patch: str) -> list[Range]:
    """The RIGHT-side line range of each hunk of `patch`, in order; a hunk that only deletes has none."""
    ranges: list[Range] = []
    start = count = seen = 0
    in_hunk = False

    def close() -> None:
        if in_hunk and seen:
            ranges.append((start, start + seen - 1))

    for line in patch.replace("\r\n", "\n").split("\n"):
        header = _HEADER.match(line)
        if header:
            close()
            start, count, seen, in_hunk = int(header.group(1)), int(header.group(2) or 1), 0, True
        elif in_hunk and seen < count and (line[:1] in ("+", " ") or line == ""):
            seen += 1  # an added or context line (an empty one: a context line whose space was stripped)
        # `-` lines, "\ No newline at end of file" and anything past the header's count show no RIGHT line
    close()
    return ranges


def diff_lines(files: Iterable[Mapping[str, Any]]) -> dict[str, list[Range]]:
    """`filename` -> the RIGHT-side ranges of its hunks, for the files that carry a `patch` (a binary file, or one
    too large, has none: nothing in it can be commented on)."""
    out: dict[str, list[Range]] = {}
    for f in files:
        name, patch = f.get("filename"), f.get("patch")
        if isinstance(name, str) and isinstance(patch, str):
            out[name] = right_ranges(patch)
    return out


def hunk_of(ranges: Sequence[Range], first: int, last: int) -> Range | None:
    """The hunk holding every line first..last, or None when they are not all in a single one."""
    return next(((a, b) for a, b in ranges if a <= first and last <= b), None)

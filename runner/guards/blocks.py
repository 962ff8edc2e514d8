"""A code block a model handed the user for a file, as the one `edit` that would make it (issue 44).

Against a 1.5B model (bench/bench_solve.py) the reply after reading the file was, chore after chore, the corrected
code in a fence — the whole file, or the one function it changes — for the user to apply. The answer rules refuse it
(`handed_over`); told only "do it yourself", the model repeated the block. So the nudge shows the change as the call
that makes it: the file's lines the block changes (`old_string`, widened by unchanged lines until it occurs once in
the file) and what the block has there (`new_string`). Pure: the file's text and the block in, the strings out.

The block is taken for the file only when most of it is the file's own lines (a snippet of the file, changed; not
an example) and something differs; the file's lines before its first line and after its last are ones it does not
show, not ones it deletes, so a snippet never shortens the file beyond the lines it replaces."""

from __future__ import annotations

import difflib

MAX_CALL = 2_000  # characters of old_string and new_string together: a larger change is the model's to make


def shows(current: str, block: str) -> bool:
    """Whether the block is the file's text as it is (all of it or a part, blank lines aside): a reply that shows
    what it already changed, not work handed over."""
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    text = [line.strip() for line in current.splitlines() if line.strip()]
    return bool(lines) and any(text[i:i + len(lines)] == lines for i in range(len(text) - len(lines) + 1))


def edit_for(current: str, block: str) -> tuple[str, str] | None:
    """(old_string, new_string) that turn `current` into what `block` shows of it; None when the block is not a
    changed part of this file."""
    old_lines = current.splitlines(keepends=True)
    new_lines = (block if block.endswith("\n") else block + "\n").splitlines(keepends=True)
    if not old_lines or not new_lines:
        return None
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    shared = sum(1 for _, j, size in matcher.get_matching_blocks() for line in new_lines[j:j + size] if line.strip())
    if shared * 2 < sum(1 for line in new_lines if line.strip()):
        return None  # mostly not this file's lines (blank ones aside): an example, another file
    # Blank lines added or dropped are spacing, not the change (a model re-spaces what it copies): a change keeps the
    # file's blank lines at its ends as they are, and one of blank lines alone is none.
    changes = [trimmed for op in matcher.get_opcodes() if op[0] != "equal"
               if (trimmed := _trim(op, old_lines, new_lines)) is not None]
    if changes and changes[0][0] == "delete" and changes[0][3] == 0:
        changes = changes[1:]  # the file before the block's first line: not shown, not deleted
    if changes and changes[-1][0] == "delete" and changes[-1][3] == len(new_lines):
        changes = changes[:-1]  # the file after its last line
    if not changes:
        return None
    lo, hi = changes[0][1], changes[-1][2]  # the file's changed lines
    middle = "".join(new_lines[changes[0][3]:changes[-1][4]])
    before = after = 0
    while True:
        head, tail = "".join(old_lines[lo - before:lo]), "".join(old_lines[hi:hi + after])
        old = head + "".join(old_lines[lo:hi]) + tail
        if old.strip() and current.count(old) == 1:
            break
        if lo - before <= 0 and hi + after >= len(old_lines):
            return None  # never once in the file (a file of repeated lines)
        if lo - before > 0 and (before <= after or hi + after >= len(old_lines)):
            before += 1
        else:
            after += 1
    new = head + middle + tail
    if old == new or len(old) + len(new) > MAX_CALL:
        return None
    return old, new


def _trim(op: tuple[str, int, int, int, int], old: list[str], new: list[str]) -> tuple[str, int, int, int, int] | None:
    """The change `op` without the file's blank lines at its ends (they stay as they are); None when it only adds or
    drops blank lines."""
    tag, i1, i2, j1, j2 = op
    while i1 < i2 and not old[i1].strip():
        i1 += 1
    while i2 > i1 and not old[i2 - 1].strip():
        i2 -= 1
    if i1 == i2 and all(not line.strip() for line in new[j1:j2]):
        return None
    return tag, i1, i2, j1, j2

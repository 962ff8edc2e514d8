"""Markdown both the transcript and the GitHub step summary write: code spans and fenced blocks no
content can break out of, plain text defused, and the last turns of a rendered transcript.

Pure functions; the text they take is the model's or a tool's (untrusted), so none of it may format,
link, fetch or close the structure around it.
"""

from __future__ import annotations

import re
import unicodedata

MAX_CELL_CHARS = 300
GITHUB_BODY_CHARS = 65_536  # the most GitHub keeps of a comment's, a review's or a pull request's body
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_NEAR_LINE_END = 2_000  # a cut goes back this far at most for a line's end


def code_span(text: str, *, in_table: bool = True) -> str:
    """`text` as a Markdown code span: a fence longer than any backtick run in it, padded when it starts
    or ends with a backtick (or with spaces on both sides, which CommonMark would strip), line breaks
    as spaces (what a code span renders anyway; a raw one would end a table row), and in a table `|` as
    `\\|`, which GFM unescapes inside code spans too. (GFM cannot express a backslash right before a
    pipe in a table cell: `a\\|b` shows as `a\\\\|b`.)"""
    text = re.sub(r"\r\n|\r|\n", " ", str(text))
    if not text:
        return "—"
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = ""
    if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " " and text.strip()):
        pad = " "
    return f"{fence}{pad}{text}{pad}{fence}"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&!#])")


def md_text(text: object) -> str:
    """Plain text for Markdown: one line, the characters that would format, link or inject HTML escaped."""
    return _MD_SPECIAL.sub(r"\\\1", re.sub(r"\s*[\r\n]+\s*", " ", str(text)))


def clip(text: str, limit: int = MAX_CELL_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fenced(text: str, info: str = "") -> str:
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`{3,}", text)), default=0) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def fence(text: str, info: str = "") -> str:
    """`text` in a fenced block no line of it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    mark = "`" * max(3, longest + 1)
    return f"{mark}{info}\n{text.rstrip(chr(10))}\n{mark}"


def last_turns(markdown: str, n: int = 3, *, shift: int = 0) -> tuple[str, int]:
    """The last `n` `## Turn` sections of a rendered transcript (up to the next top-level section, the
    final answer), and how many turns came before them. `shift` demotes their headings by that many
    levels (for embedding). Headings inside fenced blocks are output, not structure: left alone."""
    turns: list[list[str]] = []
    current: list[str] | None = None
    fence_mark: str | None = None
    for line in markdown.splitlines():
        if fence_mark is None and (m := re.match(r"^(`{3,})", line)):
            fence_mark = m.group(1)
        elif fence_mark is not None and line.strip() == fence_mark:
            fence_mark = None
        elif fence_mark is None and line.startswith("#"):
            if line.startswith("## Turn "):
                current = []
                turns.append(current)
            elif line.startswith("## ") or line.startswith("# "):
                current = None
            if shift and current is not None:
                line = "#" * shift + line
        if current is not None:
            current.append(line)
    shown = turns[-n:] if n > 0 else []
    return "\n".join(line for turn in shown for line in turn).strip("\n"), len(turns) - len(shown)


def open_fence(markdown: str) -> str | None:
    """The fence of the fenced block still open at the end of `markdown`, or None. Fences at most three spaces in
    (CommonMark's top level, where every fence agent-run writes stands); a backtick fence's info string has no
    backtick; a block closes at a line of only its character, at least as many."""
    fence: str | None = None
    for line in markdown.split("\n"):
        m = _FENCE_LINE.match(line)
        if m is None:
            continue
        mark, rest = m.group(1), m.group(2)
        if fence is None:
            if not (mark[0] == "`" and "`" in rest):
                fence = mark
        elif mark[0] == fence[0] and len(mark) >= len(fence) and not rest.strip():
            fence = None
    return fence


def fit(text: str, where: str, limit: int = GITHUB_BODY_CHARS) -> str:
    """`text` when it has at most `limit` characters; else its longest start that fits with a closing line saying it
    was cut and `where` the whole text is (the caller's Markdown: the run's artifact). The cut is at a line's end
    when one is near, else on a character boundary (never between a character and a mark that combines with it,
    nor inside a UTF-16 pair); a fenced block open at the cut is closed first. Cut `text` after masking: a secret
    cut in half is no longer one the masker knows."""
    if len(text) <= limit:
        return text
    note = "\n\n*(cut at {kept:,} of its " + f"{len(text):,} characters: {clip(where, 2_000)})*\n"
    room = max(0, limit - len(note.format(kept=len(text))))
    cut = room
    while True:
        cut = _boundary(text, cut)
        head = text[:cut]
        fence = open_fence(head)
        close = "" if fence is None else ("" if head.endswith("\n") or not head else "\n") + fence
        over = len(head) + len(close) - room
        if over <= 0 or cut == 0:
            return head + close + note.format(kept=cut)
        cut = max(0, cut - over)


def _boundary(text: str, cut: int) -> int:
    """`cut`, moved back to just after a line's end when one is near, else off a combining mark, a joiner (either
    side) or the second half of a UTF-16 pair (at most 32 characters back: past that the text is a pile of marks,
    cut anyway). `cut` < len(text)."""
    line_end = text.rfind("\n", max(0, cut - _NEAR_LINE_END), cut)
    if line_end >= 0:
        return line_end + 1
    for back in range(min(cut, 32)):
        c, before = text[cut - back], text[cut - back - 1]
        if not (unicodedata.combining(c) or c in "\u200d\ufe0e\ufe0f" or "\udc00" <= c <= "\udfff"
                or before == "\u200d"):
            return cut - back
    return cut

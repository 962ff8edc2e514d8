"""Markdown both the transcript and the GitHub step summary write: code spans and fenced blocks no
content can break out of, plain text defused, and the last turns of a rendered transcript.

Pure functions; the text they take is the model's or a tool's (untrusted), so none of it may format,
link, fetch or close the structure around it.
"""

from __future__ import annotations

import re

MAX_CELL_CHARS = 300


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

from __future__ import annotations

import difflib
from typing import Any

from runner.policy.model import Target
from runner.record.atomic import atomic_write
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

MAX_DIFF_LINES = 80
MAX_DIFF_LINE_CHARS = 500
MAX_DIFF_INPUT_CHARS = 4 * 1024 * 1024  # beyond this difflib gets slow: the diff is left out
NEAREST_INPUT_CHARS = 512 * 1024  # a larger file is not searched for the lines nearest a missing old_string
NEAREST_LINES = 10
WHOLE_FILE_LINES = 20  # a file no longer than this is shown whole when nothing in it is like old_string


class Edit(Tool):
    name = "edit"
    domain = "edit"
    risk = "medium"
    context_class = "by_reference"
    aliases = ("Edit", "MultiEdit")
    description = (
        "Replace old_string (one exact match unless replace_all) with new_string in a file."
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_string": {"type": "string", "minLength": 1},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args["path"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args["path"])
        paths.check_writable(ctx, path)
        shown = paths.display(ctx, path)
        try:
            # Bytes, not read_text: no newline translation, so a CRLF file stays CRLF.
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError("IOError", f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}") from None
        old, new = args["old_string"], args["new_string"]
        if old not in text and _crlf_only(text):
            # The model saw the file through `read`, which shows lines without their '\r'.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
        if count == 0:
            raise ToolError("InvalidArguments", f"old_string not found in {shown}{nearest_lines(text, old)}")
        if count > 1 and not args.get("replace_all"):
            raise ToolError("InvalidArguments",
                            f"old_string occurs {count} times in {shown}; add context or set replace_all")
        updated = text.replace(old, new)
        try:
            atomic_write(path, updated.encode("utf-8"))
        except OSError as exc:
            raise ToolError("IOError", f"cannot write {shown}: {exc.strerror or exc}") from None
        ctx.state.seen.add(str(path))  # what it holds now is what the agent made it: `write` may replace it
        diff, diff_lines = render_diff(text, updated)
        return ToolOutput(f"edited {shown}: {count} replacement(s)\n{diff}",
                          {"replacements": count, "diff_lines": diff_lines})


def nearest_lines(text: str, old: str) -> str:
    """The lines of `text` most like `old`'s first line, as many as `old` has (at most NEAREST_LINES) and one either
    side, numbered as `read` shows them: what a model that misremembered the file (whitespace, a changed line) copies
    from; when nothing is alike, the whole file if it has at most WHOLE_FILE_LINES lines, else "" (and "" for a file
    too large to look through)."""
    if len(text) > NEAREST_INPUT_CHARS:
        return ""
    key = next((line.strip() for line in old.split("\n") if line.strip()), "")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    best, at = 0.0, -1
    matcher = difflib.SequenceMatcher(None, b=key, autojunk=False)
    for i, line in enumerate(lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() > best and matcher.quick_ratio() > best and (ratio := matcher.ratio()) > best:
            best, at = ratio, i
    if best < 0.5:
        # Nothing alike: a small file is shown whole (a 1.5B model's `old_string` "slugify", in a file that had no
        # such word, was refused with nothing to copy from, and it sent the same call again).
        if len(lines) <= WHOLE_FILE_LINES:
            shown = "\n".join(f"{n + 1}\t{line[:MAX_DIFF_LINE_CHARS]}" for n, line in enumerate(lines)
                              if n + 1 < len(lines) or line)
            return f"; nothing in it is alike, and it holds (copy old_string from it exactly):\n{shown}"
        return ""
    span = min(old.strip("\n").count("\n") + 1, NEAREST_LINES)
    start, end = max(0, at - 1), min(len(lines), at + span + 1)
    shown = "\n".join(f"{n + 1}\t{lines[n][:MAX_DIFF_LINE_CHARS]}" for n in range(start, end))
    return f"; the nearest lines (copy old_string from them exactly):\n{shown}"


def _crlf_only(text: str) -> bool:
    return "\r\n" in text and text.count("\n") == text.count("\r\n")


def render_diff(before: str, after: str) -> tuple[str, int | None]:
    """A unified diff (3 lines of context, no file header) and its full line count (None: not computed).

    Shown up to MAX_DIFF_LINES lines, then a note of how many were left out."""
    if len(before) + len(after) > MAX_DIFF_INPUT_CHARS:
        return "[diff not shown: file too large]", None
    out: list[str] = []
    # [2:]: no `---`/`+++` file header, the summary line already names the file.
    for line in list(difflib.unified_diff(_split(before), _split(after), n=3))[2:]:
        text = line.removesuffix("\n").removesuffix("\r")  # a CRLF file's diff reads like any other
        if len(text) > MAX_DIFF_LINE_CHARS:
            text = text[:MAX_DIFF_LINE_CHARS] + f"… [line cut at {MAX_DIFF_LINE_CHARS} chars]"
        out.append(text)
        if not line.endswith("\n"):
            out.append("\\ No newline at end of file")
    if not out:
        return "[no changes]", 0
    shown = "\n".join(out[:MAX_DIFF_LINES])
    if len(out) > MAX_DIFF_LINES:
        shown += f"\n[{len(out) - MAX_DIFF_LINES} more diff lines not shown]"
    return shown, len(out)


def _split(text: str) -> list[str]:
    """Lines with their '\\n' kept (only '\\n' splits, unlike str.splitlines), so a missing final newline shows."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]

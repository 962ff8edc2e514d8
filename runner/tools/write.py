from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.policy.model import Target
from runner.record.atomic import atomic_write
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.edit import MAX_DIFF_INPUT_CHARS, render_diff


class Write(Tool):
    name = "write"
    domain = "edit"
    risk = "medium"
    context_class = "by_reference"
    aliases = ("Write",)
    # Small models `write` a file they meant to change with a fragment of it (issue 44: 5 of 18 runs wiped the file
    # they were asked to fix): replacing a file needs it read first, or `overwrite` to say it is meant.
    description = (
        "Create a file, or replace one you have read."
    )
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "overwrite": {"type": "boolean"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def spec(self) -> dict[str, Any]:
        """Sent without `overwrite`: a 1.5B model shown the argument set it on its first call and wiped the files it
        was to change (bench/bench_solve.py, 2 of 8 runs). The WouldOverwrite error names it, after read and edit."""
        spec = super().spec()
        del spec["function"]["parameters"]["properties"]["overwrite"]
        return spec

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args["path"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args["path"])
        paths.check_writable(ctx, path)
        shown = paths.display(ctx, path)
        content = args["content"]
        data = content.encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A directory in the way counts as no file: atomic_write then fails, and cleans up after itself.
            created = not path.is_file()
            if (not created and str(path) not in ctx.state.seen and not args.get("overwrite")
                    and not _holds(path, data)):
                raise ToolError("WouldOverwrite", f"{shown} exists and you have not read it in this run: writing "
                                "would replace all of it. read it first and change it with edit, or set "
                                "overwrite: true to replace it whole")
            before, note = ("", None) if created else _previous(path)
            atomic_write(path, data)
        except OSError as exc:
            raise ToolError("IOError", f"cannot write {shown}: {exc.strerror or exc}") from None
        ctx.state.seen.add(str(path))
        diff, diff_lines = (note, None) if before is None else render_diff(before, content)
        verb = "created" if created else "overwrote"
        return ToolOutput(f"{verb} {shown} ({len(data)} bytes)\n{diff}",
                          {"bytes_written": len(data), "created": created, "diff_lines": diff_lines})


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file already holds exactly `data`: writing it again destroys nothing (a replayed or repeated
    run writing what it wrote before), so it needs no read first."""
    if path.stat().st_size != len(data):
        return False
    with path.open("rb") as f:
        return f.read(len(data) + 1) == data


def _previous(path: Path) -> tuple[str | None, str | None]:
    """The file's text before the write, or None and why there is no diff."""
    if path.stat().st_size > MAX_DIFF_INPUT_CHARS:
        return None, "[diff not shown: file too large]"
    data = path.read_bytes()
    try:
        if b"\x00" not in data[:8192]:
            return data.decode("utf-8"), None
    except UnicodeDecodeError:
        pass
    return None, "[previous content was not UTF-8 text; no diff]"

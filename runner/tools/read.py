from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

# Read line by line, never whole: a 1 GiB spill file can be paged with offset/limit.
MAX_FILE_BYTES = 16 * 1024 * 1024 * 1024
DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000


class Read(Tool):
    name = "read"
    domain = "read"
    description = (
        "Read a text file. Lines are numbered from 1 (`N\\tline`). Use offset/limit to page "
        f"through long files (default limit {DEFAULT_LIMIT} lines)."
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args["path"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args["path"])
        shown = paths.display(ctx, path)
        if path.is_dir():
            raise ToolError("IOError", f"{shown} is a directory; use list")
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise ToolError("FileTooLarge", f"{shown} is {size} bytes (limit {MAX_FILE_BYTES}); use grep")
            with path.open("rb") as f:
                head = f.read(8192)
                if b"\x00" in head:
                    raise ToolError("IOError", f"{shown} looks binary; not shown")
        except OSError as exc:
            raise ToolError("IOError", f"cannot read {shown}: {exc.strerror or exc}") from None
        offset = args.get("offset", 1)
        limit = args.get("limit", DEFAULT_LIMIT)
        out: list[str] = []
        total = 0
        with path.open("r", encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                total = number
                if offset <= number < offset + limit:
                    line = line.rstrip("\n")
                    if len(line) > MAX_LINE_CHARS:
                        line = line[:MAX_LINE_CHARS] + f"… [line cut at {MAX_LINE_CHARS} chars]"
                    out.append(f"{number}\t{line}")
        last = offset + len(out) - 1
        content = "\n".join(out)
        if last < total:
            content += f"\n[lines {offset}-{last} of {total}; read with offset={last + 1} for more]"
        elif not out:
            content = f"[{shown}: {total} lines; nothing at offset {offset}]"
        return ToolOutput(content, {"lines": total, "shown": [offset, last]})

from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

MAX_ENTRIES = 1000


class List(Tool):
    name = "list"
    domain = "read"
    description = "List a directory's entries, sorted; directories end with '/'."
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory, relative to the workspace (default '.')."},
        },
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args.get("path", "."))

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args.get("path", "."))
        shown = paths.display(ctx, path)
        try:
            entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
        except NotADirectoryError:
            raise ToolError("IOError", f"{shown} is not a directory") from None
        except OSError as exc:
            raise ToolError("IOError", f"cannot list {shown}: {exc.strerror or exc}") from None
        more = len(entries) - MAX_ENTRIES
        text = "\n".join(entries[:MAX_ENTRIES])
        if more > 0:
            text += f"\n[{more} more entries not shown; use glob to narrow]"
        return ToolOutput(text or f"[{shown} is empty]", {"entries": len(entries)})

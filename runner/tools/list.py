from __future__ import annotations

import os
from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.ignore import IgnoreMatcher

MAX_ENTRIES = 1000


class List(Tool):
    name = "list"
    domain = "read"
    description = (
        "List a directory's entries, sorted; directories end with '/', entries .gitignore ignores "
        "with ' (ignored)'."
    )
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
        matcher = IgnoreMatcher(ctx.workspace)
        try:
            with os.scandir(path) as it:
                found = sorted(it, key=lambda e: e.name)
            # git sees a symlink as a file, whatever it points to: `build/` does not match a link named build.
            entries = [e.name + ("/" if e.is_dir() else "")
                       + (" (ignored)" if matcher.ignored(path / e.name, e.is_dir(follow_symlinks=False)) else "")
                       for e in found]
        except NotADirectoryError:
            raise ToolError("IOError", f"{shown} is not a directory") from None
        except OSError as exc:
            raise ToolError("IOError", f"cannot list {shown}: {exc.strerror or exc}") from None
        more = len(entries) - MAX_ENTRIES
        text = "\n".join(entries[:MAX_ENTRIES])
        if more > 0:
            text += f"\n[{more} more entries not shown; use glob to narrow]"
        return ToolOutput(text or f"[{shown} is empty]", {"entries": len(entries)})

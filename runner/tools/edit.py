from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput


class Edit(Tool):
    name = "edit"
    domain = "edit"
    description = (
        "Replace old_string with new_string in a file. old_string must occur exactly once "
        "unless replace_all is true; include enough context to make it unique."
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
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ToolError("IOError", f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}") from None
        old, new = args["old_string"], args["new_string"]
        count = text.count(old)
        if count == 0:
            raise ToolError("InvalidArguments", f"old_string not found in {shown}")
        if count > 1 and not args.get("replace_all"):
            raise ToolError("InvalidArguments",
                            f"old_string occurs {count} times in {shown}; add context or set replace_all")
        try:
            path.write_text(text.replace(old, new), encoding="utf-8")
        except OSError as exc:
            raise ToolError("IOError", f"cannot write {shown}: {exc.strerror or exc}") from None
        return ToolOutput(f"edited {shown}: {count} replacement(s)", {"replacements": count})

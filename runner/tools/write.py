from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput


class Write(Tool):
    name = "write"
    domain = "edit"
    description = "Create or overwrite a file with the given content (parent directories are created)."
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args["path"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args["path"])
        paths.check_writable(ctx, path)
        shown = paths.display(ctx, path)
        data = args["content"].encode("utf-8")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            existed = path.exists()
            path.write_bytes(data)
        except OSError as exc:
            raise ToolError("IOError", f"cannot write {shown}: {exc.strerror or exc}") from None
        verb = "overwrote" if existed else "created"
        return ToolOutput(f"{verb} {shown} ({len(data)} bytes)", {"bytes_written": len(data), "created": not existed})

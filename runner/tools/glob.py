from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Cancelled, Tool, ToolContext, ToolError, ToolOutput
from runner.tools.ignore import IgnoreMatcher, find_files
from runner.tools.readable import Readable

MAX_MATCHES = 1000


class Glob(Tool):
    name = "glob"
    domain = "read"
    risk = "low"
    aliases = ("Glob",)
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        "Files matching pattern ('**/*.py') under path (default '.'); gitignored ones only if named."
    )
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args.get("path", "."))

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        root = paths.resolve(ctx, args.get("path", "."))
        if not root.is_dir():
            raise ToolError("IOError", f"{paths.display(ctx, root)} is not a directory")
        readable = Readable(ctx)
        # A walk of a huge tree (path `/`) runs on for minutes: it asks the run's Cancel at every directory it enters
        # and stops there at the run's stop or wall clock. It only reads directories and decides names.
        matcher = IgnoreMatcher(ctx.workspace, ctx.cancel)
        try:
            # Only names read could open are shown: the model need not spend a denial to learn the rest.
            found, more = readable.first(find_files(root, args["pattern"], matcher), MAX_MATCHES, lambda f: root / f)
        except Cancelled:
            raise ToolError("Timeout", f"the run's time ran out while glob walked {paths.display(ctx, root)}; "
                            "narrow path or pattern") from None
        # Shown relative to the workspace, like grep and list, so a result can be passed to read as is.
        text = "\n".join(paths.display(ctx, root / f) for f in found) or "[no files match]"
        if more > 0:
            text += f"\n[{more} more matches not shown; narrow the pattern]"
        if readable.count:
            text += "\n" + readable.note("file", "files")
        return ToolOutput(text, {"matches": len(found) + more, **readable.details()})

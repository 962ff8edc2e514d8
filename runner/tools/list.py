from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.ignore import IgnoreMatcher
from runner.tools.readable import Readable

MAX_ENTRIES = 1000
CHECK_EVERY = 1000


class List(Tool):
    name = "list"
    domain = "read"
    risk = "low"
    aliases = ("LS",)
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        "List directory path (default '.'); gitignored entries are marked."
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
        },
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args.get("path", "."))

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args.get("path", "."))
        shown = paths.display(ctx, path)
        matcher = IgnoreMatcher(ctx.workspace, ctx.cancel)
        readable = Readable(ctx)
        try:
            with os.scandir(path) as it:
                found = sorted(_entries(it, ctx), key=lambda e: e.name)
            # Only entries read (or list) could open are shown.
            found, more = readable.first(found, MAX_ENTRIES, lambda e: path / e.name)
            # git sees a symlink as a file, whatever it points to: `build/` does not match a link named build.
            entries = [paths.escape(e.name) + _kind(e)
                       + (" (ignored)" if matcher.ignored(path / e.name, e.is_dir(follow_symlinks=False)) else "")
                       for e in found]
        except NotADirectoryError:
            raise ToolError("IOError", f"{shown} is not a directory") from None
        except OSError as exc:
            raise ToolError("IOError", f"cannot list {shown}: {exc.strerror or exc}") from None
        text = "\n".join(entries) or (f"[{shown} is empty]" if not readable.count else "")
        if more > 0:
            text += f"\n[{more} more entries not shown; use glob to narrow]"
        if readable.count:
            text = "\n".join(filter(None, [text, readable.note("entry", "entries")]))
        return ToolOutput(text, {"entries": len(entries) + more, **readable.details()})


def _entries(it: Iterator[os.DirEntry[str]], ctx: ToolContext) -> Iterator[os.DirEntry[str]]:
    """The directory's entries, the run's stop and wall clock asked every CHECK_EVERY (a directory of millions)."""
    for i, entry in enumerate(it):
        if i % CHECK_EVERY == 0:
            ctx.cancel.check()
        yield entry


def _kind(entry: os.DirEntry[str]) -> str:
    """`/` for a directory (or a symlink to one); a symlink that cannot be followed is listed, marked."""
    try:
        return "/" if entry.is_dir() else ""
    except OSError as exc:  # ELOOP: a link to itself, or links pointing at each other
        return " (symlink loop)" if exc.errno == errno.ELOOP else f" (cannot follow: {exc.strerror or exc})"

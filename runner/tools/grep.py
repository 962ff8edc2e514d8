from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.ignore import IgnoreMatcher, find_files
from runner.tools.readable import Readable

MAX_MATCHES = 500
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 16 * 1024 * 1024


class Grep(Tool):
    name = "grep"
    domain = "read"
    description = (
        "Search file contents with a Python regular expression. Prints `path:line: text`. "
        "`include` filters file names by glob (e.g. '**/*.py'). Skips .git, binary files, what .gitignore "
        "ignores (unless path names it) and files the policy does not let you read (counted)."
    )
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Python syntax)."},
            "path": {"type": "string", "description": "File or directory to search (default '.')."},
            "include": {"type": "string", "description": "Glob the file paths must match."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args.get("path", "."))

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            rx = re.compile(args["pattern"])
        except re.error as exc:
            raise ToolError("InvalidArguments", f"invalid regex: {exc}") from None
        root = paths.resolve(ctx, args.get("path", "."))
        if not root.exists():
            raise ToolError("IOError", f"{paths.display(ctx, root)} does not exist")
        # A file named by path is searched even if ignored: it was asked for.
        files = [root] if root.is_file() else self._files(ctx, root, args.get("include"))
        readable = Readable(ctx)
        searched = 0
        hits: list[str] = []
        total = 0
        for file in files:
            real = readable.real(file)
            # A symlink leading out of root would be a read the policy never decided: not searched.
            if real is None or not (file == root or real.is_relative_to(root)):
                continue
            if not readable.allows(real, walked=real == file):
                continue
            searched += 1
            for number, line in _lines(real):
                if rx.search(line):
                    total += 1
                    if len(hits) < MAX_MATCHES:
                        hits.append(f"{paths.display(ctx, file)}:{number}: {line[:MAX_LINE_CHARS]}")
        text = "\n".join(hits) or "[no matches]"
        if total > len(hits):
            text += f"\n[{total - len(hits)} more matches not shown; narrow the pattern or path]"
        if readable.count:
            text += "\n" + readable.note("file", "files")
        return ToolOutput(text, {"matches": total, "files": searched, **readable.details()})

    @staticmethod
    def _files(ctx: ToolContext, root: Path, include: str | None) -> list[Path]:
        return [root / n for n in find_files(root, include or "**", IgnoreMatcher(ctx.workspace))]


def _lines(file: Path) -> list[tuple[int, str]]:
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            return []
        data = file.read_bytes()
    except OSError:
        return []
    if b"\x00" in data[:8192]:
        return []
    return list(enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1))

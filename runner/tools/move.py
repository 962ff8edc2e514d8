from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.delete import check_changeable, entry


class Move(Tool):
    name = "move"
    domain = "edit"
    risk = "medium"
    context_class = "protected"
    description = (
        "Move source to destination (full path; parents created); overwrite replaces a file."
    )
    schema = {
        "type": "object",
        "properties": {
            "source": {"type": "string"},
            "destination": {"type": "string"},
            "overwrite": {"type": "boolean"},
        },
        "required": ["source", "destination"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        # Both are changed (one loses an entry, the other gains one), so both are decided.
        return [Target(self.domain, paths.target(ctx, entry(ctx, args[key]))) for key in ("source", "destination")]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        src, dst = entry(ctx, args["source"]), entry(ctx, args["destination"])
        check_changeable(ctx, src)
        check_changeable(ctx, dst)
        shown_src, shown_dst = paths.display(ctx, src), paths.display(ctx, dst)
        try:
            src_is_dir = stat.S_ISDIR(src.lstat().st_mode)
        except FileNotFoundError:
            raise ToolError("IOError", f"{shown_src} does not exist") from None
        except OSError as exc:
            raise ToolError("IOError", f"cannot move {shown_src}: {exc.strerror or exc}") from None
        if src == dst:
            raise ToolError("InvalidArguments", f"source and destination are the same path ({shown_src})")
        if dst.is_relative_to(src):
            raise ToolError("IOError", f"cannot move {shown_src} into itself ({shown_dst})")
        overwrote = os.path.lexists(dst)
        if overwrote:
            if dst.is_dir() and not dst.is_symlink():
                raise ToolError("IOError", f"{shown_dst} is an existing directory; give the full destination path "
                                           f"(e.g. {shown_dst}/{src.name})")
            if not args.get("overwrite"):
                raise ToolError("IOError", f"{shown_dst} exists; set overwrite: true to replace it")
            if src_is_dir:
                raise ToolError("IOError", f"cannot replace the file {shown_dst} with the directory {shown_src}")
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            copied = _move(src, dst, src_is_dir)
        except OSError as exc:
            raise ToolError("IOError", f"cannot move {shown_src} to {shown_dst}: {exc.strerror or exc}") from None
        if copied:
            try:
                _remove(src, src_is_dir)
            except OSError as exc:
                raise ToolError("IOError", f"copied {shown_src} to {shown_dst} (another filesystem) but could not "
                                           f"remove {shown_src}: {exc.strerror or exc}") from None
        replaced = " (replaced the existing file)" if overwrote else ""
        return ToolOutput(f"moved {shown_src} to {shown_dst}{replaced}",
                          {"overwrote": overwrote, "directory": src_is_dir, "across_filesystems": copied})


def _move(src: Path, dst: Path, is_dir: bool) -> bool:
    """`os.replace`, atomic within a filesystem; across filesystems, a copy into a temp name beside `dst`
    then `os.replace` onto it (the caller removes `src`). Returns whether it copied."""
    try:
        os.replace(src, dst)
        return False
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    tmp = dst.with_name(f".{dst.name[:200]}.{secrets.token_hex(4)}.tmp")
    try:
        if is_dir:
            shutil.copytree(src, tmp, symlinks=True)
        else:
            shutil.copy2(src, tmp, follow_symlinks=False)
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            _remove(tmp, is_dir)
        raise
    return True


def _remove(path: Path, is_dir: bool) -> None:
    if is_dir:
        shutil.rmtree(path)
    else:
        path.unlink()

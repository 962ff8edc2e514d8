"""Text from the file system as every record shows it. Python decodes a file name that is not UTF-8 with
surrogateescape (b'caf\\xe9.txt' becomes 'caf\\udce9.txt'): such a string cannot be encoded as UTF-8, so
json.dumps of it writes invalid UTF-8 or fails, and one tool result would break the event log, the
summary and the model's request. Everywhere it is shown, the byte becomes the four characters `\\xNN`."""

from __future__ import annotations

import os
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF: an undecodable byte, as surrogateescape made it; any other: a lone surrogate as such
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def shown(text: str) -> str:
    """`text` with every lone surrogate written as `\\xNN` (or `\\uNNNN`): always encodable as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape, text)
    return text


def shown_obj(obj: Any) -> Any:
    """A JSON-like value with `shown` applied to every string, keys included."""
    if isinstance(obj, str):
        return shown(obj)
    if isinstance(obj, dict):
        return {shown(k) if isinstance(k, str) else k: shown_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [shown_obj(v) for v in obj]
    return obj


def utf8_problem(label: str, path: str | os.PathLike[str] | None) -> str | None:
    """Why a path the command line names cannot be used, or None: a path that is not valid UTF-8 could not
    be recorded (run_started.workspace, summary.json, the commands printed to continue the run)."""
    if path is None:
        return None
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{label} {shown(text)} is not valid UTF-8: rename it (agent-run records every path as UTF-8 text)"
    return None

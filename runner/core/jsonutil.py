"""Deterministic JSON: the byte-stable prompt prefix and every hash depend on it."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any


def canonical(obj: Any) -> str:
    """Sorted keys, fixed separators, UTF-8 kept as is: same value, same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(obj: Any) -> str:
    return sha256_text(canonical(obj))


def estimate_tokens(chars: int) -> int:
    """The runner's token estimate: characters / 4 until a real tokenizer is plugged in."""
    return (chars + 3) // 4


def short(text: str, width: int = 80) -> str:
    """One line of at most `width` characters, for humans (progress lines, reasons, labels)."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def seconds_text(seconds: float) -> str:
    """`1000`, `12.5`, `0.05`: a wait as people write it (no exponent, no trailing zeros)."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def file_sha256(path: Path) -> str | None:
    """sha256 of a file's bytes, read in chunks; None when it does not exist. Only a regular file is read (a
    link is followed): a path a run's log names may be a FIFO or /dev/zero, which would block or never end,
    so anything else is an OSError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


MISSING = object()


def json_pointer(root: Any, ref: str) -> Any:
    """What a local `$ref` (`#`, `#/a/b~1c/0`) names inside `root`; MISSING when it names nothing there
    (a remote reference included: nothing is fetched)."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return MISSING
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node

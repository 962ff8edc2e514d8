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


# How deep the JSON the runner reads and writes may nest (a container inside a container counts one level): far
# above any record or call it makes (an event is a handful of levels), far below what makes a recursive walk of it
# (the parser, masking, a call's search) run out of stack. Deeper is refused where it enters, never crashed on.
MAX_DEPTH = 200


def nested_over(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether a JSON value nests more than `limit` containers deep (a scalar: 0, `{}`: 1). Walked with a stack,
    not recursion: the value it is asked about may be one that recursion cannot walk."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


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

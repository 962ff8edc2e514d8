"""A server's tools as model tools: names, schemas, the stable tool list, and results as text plus artifacts.

Pure functions over plain data (the wire shapes McpServer gives: tool dicts with name / description /
inputSchema, results with content blocks); no SDK import, no I/O except convert_result's artifact files.
"""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import mimetypes
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.core.jsonutil import MISSING, json_pointer

MODEL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_NAME = 64
HASH_LEN = 8
PREFIX = "mcp"
MAX_DESCRIPTION = 4096  # some servers ship whole manuals; past this the prompt pays for little
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
               "image/svg+xml": ".svg", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/mpeg": ".mp3",
               "audio/ogg": ".ogg", "audio/webm": ".webm", "text/plain": ".txt", "text/markdown": ".md",
               "application/json": ".json", "application/pdf": ".pdf", "application/octet-stream": ".bin"}

# ---- names -------------------------------------------------------------------------------------------------


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, valid for OpenAI (^[A-Za-z0-9_-]{1,64}$). When a character had to be replaced
    (`_`) or the name is too long (truncated), an 8-hex-digit hash of the original pair is appended, so two
    tools that would sanitise to the same name still differ, and the name is the same in every run."""
    plain = f"{PREFIX}__{server}__{tool}"
    if MODEL_NAME.match(plain):
        return plain
    return _hashed(server, tool)


def _hashed(server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:HASH_LEN]
    base = _UNSAFE.sub("_", f"{PREFIX}__{server}__{tool}")[: MAX_NAME - HASH_LEN - 1]
    return f"{base}_{digest}"


def tool_names(servers: Any) -> dict[str, tuple[str, str]]:
    """Model name → (server, tool) for every tool, in the stable order. `mcp__a__b__c` is both (a, b__c) and
    (a__b, c): when plain names collide, each colliding tool takes its hashed name instead."""
    pairs = [(server, tool["name"]) for server, tools in _sorted_servers(servers) for tool in tools]
    plain: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        plain.setdefault(tool_name(*pair), []).append(pair)
    out: dict[str, tuple[str, str]] = {}
    for name, owners in plain.items():
        if len(owners) == 1:
            out[name] = owners[0]
        else:
            for owner in owners:
                out[_hashed(*owner)] = owner
    return out


def specs_for(servers: Any) -> list[dict[str, Any]]:
    """OpenAI `tools` entries for every server's tools, sorted by server name then tool name, so the prompt
    prefix (and the provider's cache of it) is the same across runs.

    `servers`: a mapping of server name → tool dicts, or objects with `.name` and `.tools` (McpServer)."""
    names = {pair: name for name, pair in tool_names(servers).items()}
    out: list[dict[str, Any]] = []
    for server, tools in _sorted_servers(servers):
        for tool in tools:
            description = (str(tool.get("description") or "").strip()
                           or f"Tool '{tool['name']}' of MCP server '{server}'.")
            if len(description) > MAX_DESCRIPTION:
                description = description[: MAX_DESCRIPTION - 1] + "…"
            out.append({"type": "function", "function": {
                "name": names[(server, tool["name"])], "description": description,
                "parameters": sanitize_schema(tool.get("inputSchema"))}})
    return out


def _sorted_servers(servers: Any) -> list[tuple[str, list[Mapping[str, Any]]]]:
    if isinstance(servers, Mapping):
        items = [(str(name), list(tools)) for name, tools in servers.items()]
    else:
        items = [(str(s.name), list(s.tools)) for s in servers]
    out = []
    for name, tools in sorted(items, key=lambda item: item[0]):
        valid = [t for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str) and t["name"]]
        unique = {t["name"]: t for t in valid}  # a server listing a name twice: the last wins, once
        out.append((name, [unique[n] for n in sorted(unique)]))
    return out


# ---- schemas -----------------------------------------------------------------------------------------------

# Annotations and identifiers no validator needs; several OpenAI-compatible endpoints reject `$schema`, and
# `$defs` go away once their references are inlined. `examples` can be large and only repeat the description.
_DROP = frozenset({"$schema", "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$comment", "$vocabulary",
                   "$defs", "definitions", "examples", "$recursiveRef", "$recursiveAnchor"})
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_SCHEMA_ONE = ("additionalProperties", "unevaluatedProperties", "items", "additionalItems", "contains", "not",
               "if", "then", "else", "propertyNames", "unevaluatedItems", "contentSchema")
_BOOL_OK = ("additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_TOP_FORBIDDEN = ("anyOf", "oneOf", "allOf", "enum", "not", "const", "if", "then", "else")
MAX_DEPTH = 32
# Inlining `$ref`s that fan out (each definition using the previous one twice) doubles per level: blocking
# cycles is not enough. Past this many schema nodes the rest becomes `{}` (the server still validates), so a
# hostile or generated schema costs bounded time and prompt, and the server still starts.
MAX_NODES = 5000
_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


def sanitize_schema(schema: Any) -> dict[str, Any]:
    """A JSON Schema for `parameters` that OpenAI-compatible endpoints accept. Never raises; never mutates.

    - The top level is `type: object` with `properties` (added when missing). OpenAI rejects anyOf / oneOf /
      allOf / enum / not at the top: `allOf` parts are merged in; for `anyOf` / `oneOf` the alternatives'
      properties are merged and only what every alternative requires stays required (the server still
      validates the call); enum / not / const / if-then-else at the top are dropped.
    - Local `$ref`s (`#/$defs/X`, `#/definitions/X`, any `#/...` pointer) are inlined, siblings of `$ref`
      override the target; a recursive reference becomes `{}` (any value) at the point it recurs, and so does
      a remote or unresolvable one. `$defs` / `definitions` are then dropped.
    - Dropped everywhere: `$schema`, `$id`, `$anchor`, `$comment`, `$vocabulary`, dynamic/recursive refs,
      `examples`. Kept: `default`, `format` (any value), `title`, `description`, `enum`, `const`, bounds —
      they help the model and non-strict endpoints accept them.
    - Boolean schemas become `{}` (true) or `{"not": {}}` (false), except as the value of
      additionalProperties / unevaluatedProperties / additionalItems; `required` keeps only unique strings.
    - Deeper than 32 levels, past MAX_NODES schema nodes in all, or anything that is not a schema, becomes `{}`.
    """
    try:
        if not isinstance(schema, Mapping):
            return copy.deepcopy(_EMPTY)
        root = copy.deepcopy(dict(schema))
        out = _walk(root, root, 0, (), [MAX_NODES])
        return _top(out)
    except Exception:  # a schema so odd it broke the walk: the server still validates what it receives
        return copy.deepcopy(_EMPTY)


def _walk(node: Any, root: dict[str, Any], depth: int, refs: tuple[str, ...], budget: list[int]) -> Any:
    """`budget`: schema nodes left for the whole walk (shared, so a fan-out of references cannot multiply it)."""
    budget[0] -= 1
    if budget[0] < 0:
        return {}
    if node is True:
        return {}
    if node is False:
        return {"not": {}}
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return {}
    if isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        target = _resolve(root, ref) if ref not in refs else None
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if target is None:
            return _walk(siblings, root, depth + 1, refs, budget) if siblings else {}
        merged = {**target, **siblings} if isinstance(target, dict) else siblings
        return _walk(merged, root, depth + 1, (*refs, ref), budget)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or key == "$ref":
            continue
        if key in _SCHEMA_MAPS:
            if isinstance(value, dict):
                out[key] = {str(k): _walk(v, root, depth + 1, refs, budget) for k, v in value.items()}
        elif key in _SCHEMA_ONE:
            if key == "items" and isinstance(value, list):  # draft-07 tuple form
                out[key] = [_walk(v, root, depth + 1, refs, budget) for v in value]
            elif isinstance(value, bool) and key in _BOOL_OK:
                out[key] = value  # `additionalProperties: false` is the idiom every endpoint knows
            elif isinstance(value, (dict, bool)):
                out[key] = _walk(value, root, depth + 1, refs, budget)
        elif key in _SCHEMA_LISTS:
            if isinstance(value, list):
                out[key] = [_walk(v, root, depth + 1, refs, budget) for v in value]
        elif key == "required":
            if isinstance(value, list):
                out[key] = list(dict.fromkeys(v for v in value if isinstance(v, str)))
        else:
            out[key] = value
    return out


def _resolve(root: dict[str, Any], ref: str) -> Any:
    found = json_pointer(root, ref)  # remote references are not fetched
    return None if found is MISSING else found


def _top(schema: dict[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    properties = dict(out.get("properties") or {}) if isinstance(out.get("properties"), dict) else {}
    required = list(out.get("required") or [])
    for part in out.get("allOf") or []:
        if isinstance(part, dict):
            properties.update(part.get("properties") or {})
            required.extend(r for r in part.get("required") or [] if isinstance(r, str))
    alternatives = [p for p in (*(out.get("anyOf") or []), *(out.get("oneOf") or [])) if isinstance(p, dict)]
    if alternatives:
        for alt in alternatives:
            for name, prop in (alt.get("properties") or {}).items():
                properties.setdefault(name, prop)
        common = set.intersection(*(set(alt.get("required") or []) for alt in alternatives))
        required.extend(sorted(common))
    for key in _TOP_FORBIDDEN:
        out.pop(key, None)
    out["type"] = "object"
    out["properties"] = properties
    if required:
        out["required"] = list(dict.fromkeys(required))
    else:
        out.pop("required", None)
    return out


# ---- results -----------------------------------------------------------------------------------------------


def convert_result(result: Any, artifacts_dir: str | Path, call_id: str) -> tuple[str, dict[str, Any]]:
    """A tools/call result as (text for the model, details for the event log).

    Text blocks are joined with newlines. Images, audio and blob resources are written to
    `artifacts_dir/<call_id>-<index><ext>` (index: the block's position in `content`) and stand in the text as
    `[image image/png saved to <path> (1234 bytes)]`. An embedded text resource is inlined after a
    `[resource <uri> (<mime>) saved to <path> (n bytes)]` line; a resource link is described in one line.
    `structuredContent` is added as JSON when there is no text block. `details["is_error"]` is the
    result's `isError`: the caller turns it into a tool error the model can act on.

    `result`: a CallResult (McpServer.call) or the wire dict (`content`, `structuredContent`, `isError`).
    """
    content, structured, is_error = _parts(result)
    directory = Path(artifacts_dir)
    stem = _UNSAFE.sub("_", str(call_id))[:80] or "call"
    texts: list[str] = []
    artifacts: list[dict[str, Any]] = []
    has_text = False
    for index, block in enumerate(content):
        if not isinstance(block, Mapping):
            texts.append(f"[unsupported content block {type(block).__name__}]")
            continue
        kind = block.get("type")
        if kind == "text":
            has_text = True
            texts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            mime = str(block.get("mimeType") or ("image/png" if kind == "image" else "audio/wav"))
            texts.append(_save(directory, stem, index, kind, mime, block.get("data"), artifacts))
        elif kind == "resource":
            texts.append(_resource(directory, stem, index, block.get("resource"), artifacts))
        elif kind == "resource_link":
            texts.append(_link(block))
        else:
            texts.append(f"[unsupported content type {kind!r}: {json.dumps(block, default=str)[:500]}]")
    if structured is not None and not has_text:
        texts.append(json.dumps(structured, ensure_ascii=False, indent=2, default=str))
    text = "\n".join(texts)
    if not text.strip():
        text = "(the tool reported an error without a message)" if is_error else "(the tool returned no content)"
    details = {"is_error": is_error, "artifacts": artifacts,
               "content_types": [b.get("type") if isinstance(b, Mapping) else None for b in content],
               "structured": structured is not None}
    return text, details


def _parts(result: Any) -> tuple[list[Any], Any, bool]:
    if isinstance(result, Mapping):
        content = result.get("content")
        return (list(content) if isinstance(content, Sequence) and not isinstance(content, str) else [],
                result.get("structuredContent"), bool(result.get("isError")))
    content = getattr(result, "content", None) or []
    return list(content), getattr(result, "structured_content", None), bool(getattr(result, "is_error", False))


def _save(directory: Path, stem: str, index: int, kind: str, mime: str, data: Any,
          artifacts: list[dict[str, Any]], *, uri: str | None = None) -> str:
    label = f"{kind} {mime}" + (f" {uri}" if uri else "")
    try:
        raw = base64.b64decode(str(data or ""), validate=True)
    except (binascii.Error, ValueError):
        return f"[{label}: the server sent data that is not base64; not saved]"
    if len(raw) > MAX_ARTIFACT_BYTES:
        return f"[{label}: {len(raw)} bytes, over the {MAX_ARTIFACT_BYTES}-byte artifact limit; not saved]"
    path = directory / f"{stem}-{index}{_extension(mime, uri)}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    except OSError as exc:
        return f"[{label}: could not be saved: {exc.strerror or exc}]"
    artifacts.append({"index": index, "kind": kind, "mime_type": mime, "path": str(path), "bytes": len(raw),
                      **({"uri": uri} if uri else {})})
    return f"[{label} saved to {path} ({len(raw)} bytes)]"


def _resource(directory: Path, stem: str, index: int, resource: Any, artifacts: list[dict[str, Any]]) -> str:
    if not isinstance(resource, Mapping):
        return "[resource without contents]"
    uri = str(resource.get("uri") or "")
    if "blob" in resource:
        mime = str(resource.get("mimeType") or "application/octet-stream")
        return _save(directory, stem, index, "resource", mime, resource.get("blob"), artifacts, uri=uri or None)
    text = str(resource.get("text") or "")
    mime = str(resource.get("mimeType") or "text/plain")
    encoded = base64.b64encode(text.encode()).decode()
    line = _save(directory, stem, index, "resource", mime, encoded, artifacts, uri=uri or None)
    return f"{line}\n{text}"


def _link(block: Mapping[str, Any]) -> str:
    bits = [str(block.get("name") or ""), str(block.get("uri") or "")]
    extra = [str(block[k]) for k in ("mimeType", "description") if block.get(k)]
    return f"[resource link: {' '.join(b for b in bits if b)}{' (' + '; '.join(extra) + ')' if extra else ''}]"


def _extension(mime: str, uri: str | None) -> str:
    base = mime.split(";")[0].strip().lower()
    if base in _EXTENSIONS:
        return _EXTENSIONS[base]
    guessed = mimetypes.guess_extension(base, strict=False)
    if guessed:
        return guessed
    if uri:
        suffix = Path(uri.split("?")[0]).suffix
        if re.fullmatch(r"\.[A-Za-z0-9]{1,8}", suffix):
            return suffix
    return ".bin"


__all__ = ["convert_result", "sanitize_schema", "specs_for", "tool_name", "tool_names"]

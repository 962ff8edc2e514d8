"""MCP server configuration in the shape Claude Code, Codex and others read, so users can reuse theirs:

    {"mcpServers": {
        "time":   {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "cwd": "/srv"},
        "issues": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}

`type` is `stdio` (the default when `command` is given) or `http` / `streamable-http`. Beyond that shape, two
keys the runner itself defines: `"required": true` (a server that fails to start fails the run) and
`"sandbox": {"network": "none" | "all" | {"allow": [...]}, "writable": [...], "readOnly": [...]}` (stdio only), and
`"readOnlyTools": true | ["tool", ...]`: the server's tools that change nothing, run at once when one reply calls
several (--parallel-calls).

`${VAR}` and `${VAR:-default}` are expanded in command, args, env, cwd, url and headers from the trusted job
environment (never from the workspace); `:-` takes the default when the variable is unset or empty, as a
shell does. An unset variable without a default is an error: a server started with a literal `${TOKEN}`
would fail later, far from the cause.

Errors are PolicyError (`file:line:col: message`), positioned with the JSONC parser the policy uses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from runner.core.inputfile import InputRefused, read_input_text
from runner.policy.jsonc import Located, PolicyError, parse

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
STDIO_TYPES = ("stdio",)
HTTP_TYPES = ("http", "streamable-http")
_COMMON_KEYS = ("type", "required", "readOnlyTools")
_STDIO_KEYS = (*_COMMON_KEYS, "command", "args", "env", "cwd", "sandbox")
_HTTP_KEYS = (*_COMMON_KEYS, "url", "headers")
_SANDBOX_KEYS = ("network", "writable", "readOnly")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

Transport = Literal["stdio", "http"]
JsonPath = tuple[str | int, ...]


@dataclass(frozen=True)
class ServerConfig:
    """One configured server, variables expanded. `env` and `headers` hold secrets: only `describe()` is for logs."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    source: str = ""
    required: bool = False
    sandbox: dict[str, Any] | None = None  # as written; the runner turns it into its sandbox settings
    # `readOnlyTools`: true (every tool) or the tools (the server's names) that change neither the workspace nor the
    # world, so a reply's calls of them run at once (--parallel-calls). The trusted config's word, never the
    # server's own `readOnlyHint` (the server is not trusted to say what is safe to overlap).
    read_only_tools: bool | tuple[str, ...] = ()
    # What describe() shows of command/args/url: the text before expansion, so `--token ${TOKEN}`
    # stays a reference and never becomes the secret.
    display: str = field(default="", compare=False)
    # An http server's policy target `url:<this>`: the URL as written (variables unexpanded), without
    # credentials, query or fragment, so that what the policy decides and the events record holds no secret.
    policy_url: str = field(default="", compare=False)

    @property
    def shown(self) -> str:
        """The command line or URL as configured (variables unexpanded, no URL credentials or query)."""
        if self.display:
            return self.display
        if self.transport == "http":
            return _safe_url(self.url or "")
        return " ".join(_quote(a) for a in (self.command or "", *self.args))

    def describe(self) -> str:
        """A one-line summary safe for logs and events: env and header names, never their values."""
        parts = [f"{self.name}: {self.transport} {self.shown}"]
        if self.env:
            parts.append(f"env keys [{', '.join(sorted(self.env))}]")
        if self.headers:
            parts.append(f"header keys [{', '.join(sorted(self.headers))}]")
        if self.cwd:
            parts.append(f"cwd {self.cwd}")
        if self.source:
            parts.append(f"(from {self.source})")
        return " ".join(parts)


def load_mcp_config(path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> dict[str, ServerConfig]:
    """Read a JSON/JSONC file holding `{"mcpServers": {...}}`. Raises PolicyError (file:line:col) on any problem."""
    source = str(path)
    try:
        text = read_input_text(path, "--mcp-config")
    except InputRefused as exc:  # a FIFO, a device, over 16 MiB: never read (it would hang or fill memory)
        raise PolicyError(source, 1, 1, exc.detail, where=exc.option) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(source, 1, 1, f"cannot read MCP config: {exc}", where=source) from None
    located = parse(text, source)
    top = located.value
    if not isinstance(top, dict):
        raise _error(source, located, (), "an MCP config must be a JSON object with an 'mcpServers' object")
    for key in top:
        if key != "mcpServers":
            raise _error(source, located, (key,), f"unknown key '{key}' (expected only 'mcpServers')", key=True)
    if "mcpServers" not in top:
        raise _error(source, located, (), "missing 'mcpServers'")
    return servers_from_mapping(top["mcpServers"], source, environ, located=located, path=("mcpServers",))


def servers_from_mapping(obj: Any, source: str, environ: Mapping[str, str] | None = None, *,
                         located: Located | None = None, path: JsonPath = ("mcpServers",)) -> dict[str, ServerConfig]:
    """Servers from an already-parsed `mcpServers` object (e.g. the policy file's). Pass the file's `located`
    and the object's `path` in it for positioned errors; without them errors say `source: mcpServers.<name>`."""
    env = os.environ if environ is None else environ
    if not isinstance(obj, dict):
        raise _error(source, located, path, f"'mcpServers' must be an object, got {_type(obj)}")
    out: dict[str, ServerConfig] = {}
    for name, spec in obj.items():
        if not SERVER_NAME.match(name):
            raise _error(source, located, (*path, name),
                         f"MCP server name '{name}' must match ^[A-Za-z0-9_-]{{1,32}}$", key=True)
        out[name] = _server(name, spec, source, env, located, (*path, name))
    return out


def merge(*configs: Mapping[str, ServerConfig]) -> dict[str, ServerConfig]:
    """One mapping from several; a later config wins for a name it shares with an earlier one (whole entry)."""
    out: dict[str, ServerConfig] = {}
    for config in configs:
        out.update(config)
    return out


def expand(value: str, environ: Mapping[str, str]) -> str:
    """`${VAR}` / `${VAR:-default}` from `environ`. KeyError names the first missing variable."""

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        current = environ.get(name)
        if default is not None:
            return current if current else default
        if current is None:
            raise KeyError(name)
        return current

    return _VAR.sub(one, value)


def _server(name: str, spec: Any, source: str, environ: Mapping[str, str], located: Located | None,
            path: JsonPath) -> ServerConfig:
    def fail(message: str, sub: JsonPath = (), *, key: bool = False) -> PolicyError:
        return _error(source, located, (*path, *sub), f"MCP server '{name}': {message}", key=key)

    if not isinstance(spec, dict):
        raise fail(f"must be an object, got {_type(spec)}")
    kind = spec.get("type")
    if kind is None:
        kind = "http" if "url" in spec and "command" not in spec else "stdio"
    if kind == "sse":
        raise fail("type 'sse' is not supported; use a streamable HTTP endpoint ('type': 'http')", ("type",))
    if kind not in (*STDIO_TYPES, *HTTP_TYPES):
        raise fail(f"unknown type {kind!r} (expected 'stdio', 'http' or 'streamable-http')", ("type",))
    transport: Transport = "stdio" if kind in STDIO_TYPES else "http"
    allowed = _STDIO_KEYS if transport == "stdio" else _HTTP_KEYS
    for key in spec:
        if key not in allowed:
            hint = f" (a {transport} server takes {', '.join(allowed)})"
            raise fail(f"unknown key '{key}'{hint}", (key,), key=True)

    def text(key: str) -> str | None:
        value = spec.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise fail(f"'{key}' must be a string, got {_type(value)}", (key,))
        return value

    def strings(key: str) -> list[str]:
        value = spec.get(key, [])
        if not isinstance(value, list):
            raise fail(f"'{key}' must be an array of strings, got {_type(value)}", (key,))
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise fail(f"'{key}[{i}]' must be a string, got {_type(item)}", (key, i))
        return value

    def table(key: str) -> dict[str, str]:
        value = spec.get(key, {})
        if not isinstance(value, dict):
            raise fail(f"'{key}' must be an object of strings, got {_type(value)}", (key,))
        for k, v in value.items():
            if not isinstance(v, str):
                raise fail(f"'{key}.{k}' must be a string, got {_type(v)}", (key, k))
        return value

    def sub(value: str, where: JsonPath) -> str:
        try:
            return expand(value, environ)
        except KeyError as missing:
            raise fail(f"environment variable {missing.args[0]} is not set (write ${{{missing.args[0]}:-default}} "
                       "for a default)", where) from None

    common = _common(spec, source, fail)

    if transport == "http":
        url = text("url")
        if not url:
            raise fail("an http server needs 'url'", ())
        expanded_url = sub(url, ("url",))
        if urlsplit(expanded_url).scheme not in ("http", "https"):
            raise fail(f"'url' must be an http:// or https:// URL, got {_safe_url(url)!r}", ("url",))
        headers = {k: sub(v, ("headers", k)) for k, v in table("headers").items()}
        return ServerConfig(name=name, transport="http", url=expanded_url, headers=headers, display=_safe_url(url),
                            policy_url=_safe_url(url, query=""), **common)

    command = text("command")
    if not command:
        raise fail("a stdio server needs 'command' (or 'type': 'http' with 'url')", ())
    args = strings("args")
    cwd = text("cwd")
    return ServerConfig(
        name=name, transport="stdio", command=sub(command, ("command",)),
        args=tuple(sub(a, ("args", i)) for i, a in enumerate(args)),
        env={k: sub(v, ("env", k)) for k, v in table("env").items()},
        cwd=sub(cwd, ("cwd",)) if cwd is not None else None, **common,
        sandbox=_sandbox(spec.get("sandbox"), fail), display=" ".join(_quote(a) for a in (command, *args)))


def _common(spec: dict[str, Any], source: str, fail: Any) -> dict[str, Any]:
    """The keys every transport takes: `required` (true or false), `readOnlyTools` (true, false, or the server's
    tool names)."""
    required = spec.get("required", False)
    if not isinstance(required, bool):
        raise fail(f"'required' must be true or false, got {_type(required)}", ("required",))
    value = spec.get("readOnlyTools", [])
    if not isinstance(value, bool) and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
        raise fail(f"'readOnlyTools' must be true or an array of tool names, got {_type(value)}", ("readOnlyTools",))
    return {"source": source, "required": required, "read_only_tools": value if isinstance(value, bool)
            else tuple(value)}


def _sandbox(value: Any, fail: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(f"'sandbox' must be an object, got {_type(value)}", ("sandbox",))
    for key in value:
        if key not in _SANDBOX_KEYS:
            raise fail(f"unknown key 'sandbox.{key}' (expected {', '.join(_SANDBOX_KEYS)})", ("sandbox", key), key=True)
    out: dict[str, Any] = {}
    if "network" in value:
        net = value["network"]
        ok = net in ("none", "all") or (
            isinstance(net, dict) and set(net) == {"allow"} and isinstance(net["allow"], list)
            and all(isinstance(h, str) for h in net["allow"]))
        if not ok:
            raise fail("'sandbox.network' must be \"none\", \"all\" or {\"allow\": [\"host\", ...]}",
                       ("sandbox", "network"))
        out["network"] = {"allow": list(net["allow"])} if isinstance(net, dict) else net
    for key in ("writable", "readOnly"):
        if key in value:
            paths = value[key]
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise fail(f"'sandbox.{key}' must be an array of paths", ("sandbox", key))
            out[key] = list(paths)
    return out


def _error(source: str, located: Located | None, path: JsonPath, message: str, *, key: bool = False) -> PolicyError:
    if located is None:
        where = ".".join(str(p) for p in path) or "mcpServers"
        return PolicyError(source, 1, 1, message, where=f"{source}: {where}")
    line, col = located.position(path, key=key)
    return PolicyError(source, line, col, message)


def _safe_url(url: str, query: str = "…") -> str:
    """The URL without credentials or query (either may carry a token); `query` marks a query left out."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, query if parts.query else "", ""))


def _quote(arg: str) -> str:
    return arg if arg and not re.search(r"\s|['\"]", arg) else repr(arg)


def _type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)

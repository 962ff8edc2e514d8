"""mcp__<server>__<tool>: one tool of a configured MCP server, as a model tool.

Decided by the policy as domain `mcp`, target `mcp:<server>/<tool>` (the original names; the
model-facing name is sanitised). Its result goes through the same truncation and spill path as
every tool; images and resources become files under RUN_DIR/mcp/artifacts with a text reference.
A result with `isError`, and a server that fails, hangs or answers garbage, is a structured
`McpError` (with `kind`) the model can act on — never a traceback. A server that crashed or stopped
speaking MCP is dropped for the rest of the run (runner/mcp/runtime.py records it once).
"""

from __future__ import annotations

from typing import Any, Protocol

from runner.mcp.client import McpCallError, McpError, McpServer
from runner.mcp.tools import convert_result
from runner.policy.model import Target
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

DEFAULT_CALL_TIMEOUT_S = 120.0


class Servers(Protocol):
    """What a tool needs of the run's servers (runner/mcp/runtime.py McpRuntime): the tool is built by the
    runtime and handed it, so it names this contract rather than the runtime that implements it."""

    call_timeout_s: float

    def usable(self, name: str) -> McpServer | None: ...

    def why_down(self, name: str) -> str: ...

    def read_only(self, name: str) -> bool | tuple[str, ...]: ...

    def call_failed(self, name: str, exc: McpError) -> None: ...


class McpTool(Tool):
    domain = "mcp"
    risk = "medium"  # acts in the server's world, which the policy sees only as mcp:<server>/<tool>
    closed_in_spec = True  # the server's schema, as runner/mcp/tools.py sanitised it

    def __init__(self, function: dict[str, Any], server: str, tool: str, runtime: Servers) -> None:
        """`function`: the tool's entry from runner/mcp/tools.py specs_for (name, capped description,
        sanitised parameters), so what the model sees has one code path."""
        self.name = str(function["name"])  # type: ignore[misc]  # per instance: each MCP tool is its own
        self.server = server
        self.tool = tool
        self.description = str(function["description"])  # type: ignore[misc]
        self.schema = function["parameters"]  # type: ignore[misc]
        self.runtime = runtime
        marked = runtime.read_only(server)
        # Only the trusted MCP config marks a tool read-only (never the server's own annotations).
        self.concurrent = "read" if marked is True or (marked and tool in marked) else None  # type: ignore[misc]

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return [Target("mcp", f"mcp:{self.server}/{self.tool}")]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        server = self.runtime.usable(self.server)
        if server is None:
            raise ToolError("McpError", f"MCP server '{self.server}' is not available in this run: "
                            f"{self.runtime.why_down(self.server)}; do not call its tools again",
                            kind="unavailable", server=self.server)
        timeout = self.runtime.call_timeout_s
        left = ctx.cancel.remaining()
        if left is not None:
            timeout = min(timeout, max(left, 0.1))
        try:
            result = server.call(self.tool, args, timeout, cancel=ctx.cancel)
        except McpCallError as exc:
            self.runtime.call_failed(self.server, exc)
            hint = "" if exc.kind in ("timeout", "rpc_error") else "; the server is gone for the rest of this run"
            raise ToolError("McpError", f"{exc.message}{hint}", kind=exc.kind, server=self.server) from None
        artifacts = (ctx.run_dir / "mcp" / "artifacts") if ctx.run_dir else None
        # A child's call ids repeat its parent's and its siblings' (each conversation numbers its own): its artifacts
        # are named by its id too, or one child's image would overwrite another's.
        stem = f"{ctx.agent}-{ctx.call_id or 'call'}" if ctx.agent else (ctx.call_id or "call")
        text, details = convert_result(result, artifacts or "mcp-artifacts", stem)
        if details.get("is_error"):
            raise ToolError("McpError", text or f"{self.tool} failed (the server gave no message)",
                            kind="tool_error", server=self.server)
        return ToolOutput(text, {**details, "server": self.server, "tool": self.tool})

"""Tool schemas grammar-constrained servers can use: llama-cpp-python turns each tool's JSON Schema into a
sampling grammar, and its server crashed (SIGSEGV) on the `task` tool's `maxLength: 100000` the moment the
model picked it. No built-in schema bounds a length or a count above 1,000; the limit is enforced in code."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from runner.engine.cancel import RunCancel
from runner.subagents.profiles import BUILTIN, GENERAL
from runner.subagents.tool import MAX_PROMPT_CHARS, TaskTool
from runner.tools.base import ToolContext, ToolError
from runner.tools.registry import core_tools

BOUNDS = ("maxLength", "maxItems", "maxProperties", "maxContains")


def _schemas() -> list[tuple[str, dict[str, Any]]]:
    specs = core_tools().with_tools([TaskTool({GENERAL: BUILTIN})]).specs()
    return [(s["function"]["name"], s["function"]["parameters"]) for s in specs]


def _bounds(node: Any, path: str = "") -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    if isinstance(node, dict):
        found += [(f"{path}/{k}", v) for k, v in node.items() if k in BOUNDS and isinstance(v, int)]
        for k, v in node.items():
            found += _bounds(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _bounds(v, f"{path}/{i}")
    return found


def test_no_tool_schema_bounds_a_length_above_1000():
    big = {name: [(p, n) for p, n in _bounds(schema) if n > 1000] for name, schema in _schemas()}
    assert {k: v for k, v in big.items() if v} == {}
    assert "task" in dict(_schemas())


def test_the_task_prompt_limit_is_enforced_in_code(tmp_path):
    tool = TaskTool({GENERAL: BUILTIN})
    ctx = ToolContext(workspace=tmp_path, cancel=RunCancel())
    assert tool.targets({"description": "d", "prompt": "x" * MAX_PROMPT_CHARS}, ctx)[0].target == "agent:general"
    with pytest.raises(ToolError) as err:
        tool.targets({"description": "d", "prompt": "x" * (MAX_PROMPT_CHARS + 1)}, ctx)
    assert err.value.type == "InvalidArguments"


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
def test_every_tool_schema_renders_through_llama_cpp_pythons_grammar_converter():
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    for name, schema in _schemas():
        assert json_schema_to_gbnf(json.dumps(schema)), name

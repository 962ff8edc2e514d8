"""The built-in tool definitions stay short (issue 27, item 7): they were 80% of a small model's first prompt
(13 tools, ~1,900 tokens). A budget, not a timing: chars/4 of the tools array as the transport sends it."""

from __future__ import annotations

import json

from runner.subagents.profiles import BUILTIN, GENERAL
from runner.subagents.tool import TaskTool
from runner.tools.registry import core_tools

BUDGET_TOKENS = 1_100


def test_the_default_tools_array_is_at_most_1100_tokens():
    specs = core_tools().with_tools([TaskTool({GENERAL: BUILTIN})]).specs()
    assert len(specs) == 13  # what a run under the default policy offers
    sent = json.dumps(specs, ensure_ascii=False, separators=(",", ":"))  # runner/model/transport.py's form
    assert len(sent) / 4 <= BUDGET_TOKENS, f"{len(sent) / 4:.0f} tokens: shorten a description"


def test_what_is_left_out_of_the_sent_schema_is_still_validated():
    edit = core_tools().get("edit")
    sent = edit.spec()["function"]["parameters"]
    assert "additionalProperties" not in sent and "minLength" not in sent["properties"]["old_string"]
    assert edit.schema["additionalProperties"] is False and edit.schema["properties"]["old_string"]["minLength"] == 1


def test_write_is_sent_without_overwrite_which_it_still_takes():
    # A small model shown `overwrite` set it unasked (issue 44); the WouldOverwrite error names it.
    write = core_tools().get("write")
    assert list(write.spec()["function"]["parameters"]["properties"]) == ["path", "content"]
    assert write.schema["properties"]["overwrite"] == {"type": "boolean"}

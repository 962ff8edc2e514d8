from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from runner.mcp.client import CallResult
from runner.mcp.tools import convert_result, sanitize_schema, specs_for, tool_name, tool_names

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def test_plain_names_are_kept() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("gh-1", "create-issue") == "mcp__gh-1__create-issue"


def test_odd_characters_are_replaced_and_hashed() -> None:
    dotted, underscored = tool_name("s", "files.read"), tool_name("s", "files_read")
    assert OPENAI_NAME.match(dotted) and dotted.startswith("mcp__s__files_read_")
    assert underscored == "mcp__s__files_read"
    assert dotted != underscored  # a replaced character never makes two tools one
    for odd in ("a/b", "a b", "ünïcode", "emoji🙂", "", "x" * 200, "a.b" * 40):
        assert OPENAI_NAME.match(tool_name("srv", odd)), odd


def test_long_names_are_truncated_stable_and_unique() -> None:
    long_a, long_b = "get_" + "very_" * 20 + "long_a", "get_" + "very_" * 20 + "long_b"
    a, b = tool_name("server-with-a-long-name-0123456", long_a), tool_name("server-with-a-long-name-0123456", long_b)
    assert len(a) == 64 and len(b) == 64 and a != b
    assert a == tool_name("server-with-a-long-name-0123456", long_a)  # deterministic (no per-process salt)
    assert a[:55] == b[:55]  # same truncated stem, different hash suffix


def test_double_underscore_ambiguity_is_resolved() -> None:
    names = tool_names({"a": [{"name": "b__c"}], "a__b": [{"name": "c"}], "z": [{"name": "ok"}]})
    assert len(names) == 3
    assert set(names.values()) == {("a", "b__c"), ("a__b", "c"), ("z", "ok")}
    assert "mcp__z__ok" in names
    assert all(OPENAI_NAME.match(n) for n in names)


def test_specs_are_sorted_and_stable() -> None:
    servers = {
        "zeta": [{"name": "b", "description": "B", "inputSchema": {"type": "object", "properties": {}}},
                 {"name": "a", "description": "", "inputSchema": {}}],
        "alpha": [{"name": "y.z", "description": "dotted", "inputSchema": {"properties": {"q": {"type": "string"}}}}],
    }
    reordered = {"alpha": servers["alpha"], "zeta": list(reversed(servers["zeta"]))}
    specs = specs_for(servers)
    assert specs == specs_for(reordered)
    names = [s["function"]["name"] for s in specs]
    assert names[0].startswith("mcp__alpha__y_z_") and names[1:] == ["mcp__zeta__a", "mcp__zeta__b"]
    assert specs[1]["function"]["description"] == "Tool 'a' of MCP server 'zeta'."
    assert specs[0]["type"] == "function"
    assert specs[0]["function"]["parameters"] == {"type": "object", "properties": {"q": {"type": "string"}}}

    class Fake:  # McpServer-like objects work too
        def __init__(self, name: str, tools: list) -> None:
            self.name, self.tools = name, tools

    assert specs_for([Fake("zeta", servers["zeta"]), Fake("alpha", servers["alpha"])]) == specs


def test_schema_from_pydantic_with_defs_and_refs() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:x", "title": "createArguments",
        "type": "object",
        "$defs": {"Label": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                  "Tree": {"type": "object",
                           "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}},
        "properties": {
            "labels": {"type": "array", "items": {"$ref": "#/$defs/Label"}},
            "main": {"$ref": "#/$defs/Label", "description": "the main one"},
            "tree": {"$ref": "#/$defs/Tree"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "when": {"type": "string", "format": "date-time", "default": "now", "examples": ["2024-01-01T00:00:00Z"]},
        },
        "required": ["labels", "labels", 3],
    }
    out = sanitize_schema(schema)
    text = json.dumps(out)
    assert "$ref" not in text and "$defs" not in text and "$schema" not in text and "$id" not in text
    assert out["type"] == "object" and out["required"] == ["labels"]
    assert out["properties"]["labels"]["items"]["required"] == ["name"]
    assert out["properties"]["main"]["description"] == "the main one"  # siblings of $ref win
    assert out["properties"]["main"]["properties"] == {"name": {"type": "string"}}
    assert out["properties"]["tree"]["properties"]["kids"]["items"] == {}  # recursion stops
    assert out["properties"]["remote"] == {}
    assert out["properties"]["when"] == {"type": "string", "format": "date-time", "default": "now"}
    assert schema["properties"]["main"] == {"$ref": "#/$defs/Label", "description": "the main one"}  # not mutated


def test_schema_from_zod_draft07_with_definitions() -> None:
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
              "definitions": {"Mode": {"type": "string", "enum": ["a", "b"]}},
              "properties": {"mode": {"$ref": "#/definitions/Mode"}, "flag": True, "never": False,
                             "pair": {"type": "array", "items": [{"type": "string"}, {"type": "number"}]}}}
    out = sanitize_schema(schema)
    assert out["properties"]["mode"] == {"type": "string", "enum": ["a", "b"]}
    assert out["properties"]["flag"] == {} and out["properties"]["never"] == {"not": {}}
    assert out["properties"]["pair"]["items"] == [{"type": "string"}, {"type": "number"}]
    assert out["additionalProperties"] is False and "definitions" not in out


def test_schema_top_level_unions_are_flattened() -> None:
    schema = {"anyOf": [{"type": "object", "properties": {"id": {"type": "integer"}, "q": {"type": "string"}},
                         "required": ["id", "q"]},
                        {"type": "object", "properties": {"url": {"type": "string"}, "q": {"type": "string"}},
                         "required": ["url", "q"]}]}
    out = sanitize_schema(schema)
    assert "anyOf" not in out and out["type"] == "object"
    assert set(out["properties"]) == {"id", "q", "url"} and out["required"] == ["q"]
    all_of = sanitize_schema({"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                                        {"properties": {"b": {"type": "string"}}}], "enum": [1]})
    assert all_of == {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                      "required": ["a"]}


def test_schema_odd_input_never_crashes() -> None:
    for odd in (None, "string", 3, [], {"type": "string"}, {"properties": "nope"}, {"properties": {"a": "b"}},
                {"$ref": "#/nowhere"}, {"$ref": "#"}, {"required": "a"}, {"items": 5}):
        out = sanitize_schema(odd)
        assert out["type"] == "object" and isinstance(out["properties"], dict), odd
    deep: dict = {"type": "object", "properties": {}}
    node = deep
    for _ in range(200):
        child: dict = {"type": "object", "properties": {}}
        node["properties"]["x"] = child
        node = child
    assert sanitize_schema(deep)["type"] == "object"
    assert sanitize_schema({"properties": {"a": "b"}})["properties"] == {"a": {}}


def test_convert_text_image_and_resources(tmp_path: Path) -> None:
    blob = base64.b64encode(b"\x00\x01binary").decode()
    result = {"content": [
        {"type": "text", "text": "here it is"},
        {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
        {"type": "audio", "data": base64.b64encode(b"RIFF....").decode(), "mimeType": "audio/wav"},
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "some notes"}},
        {"type": "resource", "resource": {"uri": "file:///a.gz", "mimeType": "application/gzip", "blob": blob}},
        {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv", "mimeType": "text/csv"},
    ], "isError": False}
    artifacts = tmp_path / "artifacts"
    text, details = convert_result(result, artifacts, "call_abc/1")
    assert text.startswith("here it is\n")
    image = artifacts / "call_abc_1-1.png"
    assert image.read_bytes() == PNG
    assert f"[image image/png saved to {image} ({len(PNG)} bytes)]" in text
    assert (artifacts / "call_abc_1-2.wav").read_bytes() == b"RIFF...."
    assert (artifacts / "call_abc_1-3.txt").read_text() == "some notes"
    assert "file:///notes.txt" in text and "\nsome notes" in text
    assert (artifacts / "call_abc_1-4.gz").read_bytes() == b"\x00\x01binary"
    assert "[resource link: big.csv file:///big.csv (text/csv)]" in text
    assert details["is_error"] is False
    assert [a["index"] for a in details["artifacts"]] == [1, 2, 3, 4]
    assert details["artifacts"][0] == {"index": 1, "kind": "image", "mime_type": "image/png", "path": str(image),
                                       "bytes": len(PNG)}


def test_convert_structured_error_and_bad_data(tmp_path: Path) -> None:
    text, details = convert_result({"content": [], "structuredContent": {"temp": 21}}, tmp_path, "c1")
    assert json.loads(text) == {"temp": 21} and details["structured"] is True
    # With text content, structured content is not repeated.
    text, _ = convert_result({"content": [{"type": "text", "text": "21 degrees"}], "structuredContent": {"t": 21}},
                             tmp_path, "c2")
    assert text == "21 degrees"
    text, details = convert_result(CallResult(content=[{"type": "text", "text": "boom"}], is_error=True), tmp_path,
                                   "c3")
    assert text == "boom" and details["is_error"] is True
    text, details = convert_result({"content": [], "isError": True}, tmp_path, "c4")
    assert "error" in text and details["is_error"] is True
    text, details = convert_result({"content": [{"type": "image", "data": "%%%not base64", "mimeType": "image/png"},
                                                {"type": "hologram"}]}, tmp_path, "c5")
    assert "not base64" in text and "unsupported content type 'hologram'" in text
    assert details["artifacts"] == [] and not list(tmp_path.glob("c5-*"))
    assert convert_result({}, tmp_path, "c6")[0] == "(the tool returned no content)"


def test_references_that_fan_out_are_bounded() -> None:
    # d40 uses d39 twice, which uses d38 twice...: 2**40 nodes once inlined, with no cycle anywhere.
    defs: dict = {"d0": {"type": "string"}}
    for i in range(1, 41):
        defs[f"d{i}"] = {"type": "object", "properties": {"a": {"$ref": f"#/$defs/d{i - 1}"},
                                                          "b": {"$ref": f"#/$defs/d{i - 1}"}}}
    schema = {"$defs": defs, "type": "object", "properties": {"root": {"$ref": "#/$defs/d40"}}}
    out = sanitize_schema(schema)  # unbounded, this would not return at all
    assert out["type"] == "object" and "root" in out["properties"]
    assert len(json.dumps(out)) < 1_000_000  # a bounded prompt, the rest left as `{}` for the server to check
    assert out["properties"]["root"]["properties"]["a"]["type"] == "object"  # the start is inlined as usual

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.mcp.config import ServerConfig, expand, load_mcp_config, merge, servers_from_mapping
from runner.policy.jsonc import PolicyError, parse


def write(tmp_path: Path, text: str, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_claude_code_shape_with_both_transports(tmp_path: Path) -> None:
    path = write(tmp_path, """{
      // comments and trailing commas: JSONC
      "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"], "env": {"TZ": "UTC"},
                 "cwd": "/srv",},
        "explicit": {"type": "stdio", "command": "node", "args": ["server.js"]},
        "issues": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer t"}},
        "other": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
      }
    }""")
    servers = load_mcp_config(path, {})
    assert list(servers) == ["time", "explicit", "issues", "other"]
    time = servers["time"]
    assert time == ServerConfig(name="time", transport="stdio", command="uvx",
                                args=("mcp-server-time", "--local-timezone", "UTC"), env={"TZ": "UTC"}, cwd="/srv",
                                source=str(path))
    assert servers["explicit"].transport == "stdio"
    assert servers["issues"].transport == "http" and servers["issues"].headers == {"Authorization": "Bearer t"}
    assert servers["other"].transport == "http" and servers["other"].url == "http://127.0.0.1:9/mcp"
    with pytest.raises(AttributeError):
        time.name = "x"  # type: ignore[misc]  # frozen


def test_required_and_sandbox_keys(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"mcpServers": {"s": {
        "command": "x", "required": True, "sandbox": {"network": {"allow": ["registry.npmjs.org"]},
                                                      "writable": ["/cache"]}}}}))
    server = load_mcp_config(path, {})["s"]
    assert server.required is True
    assert server.sandbox == {"network": {"allow": ["registry.npmjs.org"]}, "writable": ["/cache"]}


def test_merge_later_wins_per_name(tmp_path: Path) -> None:
    first = load_mcp_config(write(tmp_path, '{"mcpServers": {"a": {"command": "one"}, "b": {"command": "b"}}}',
                                  "1.json"), {})
    second = load_mcp_config(write(tmp_path, '{"mcpServers": {"a": {"type": "http", "url": "http://h/mcp"}}}',
                                   "2.json"), {})
    merged = merge(first, second)
    assert set(merged) == {"a", "b"}
    assert merged["a"].transport == "http" and merged["a"].source.endswith("2.json")
    assert merged["b"].command == "b"
    assert merge(second, first)["a"].command == "one"


def test_variable_expansion(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"mcpServers": {
        "s": {"command": "${TOOLS}/bin/server", "args": ["--token", "${TOKEN}", "--mode=${MODE:-fast}", "$HOME"],
              "env": {"API_KEY": "${TOKEN}", "EMPTY_DEFAULT": "${EMPTY:-fallback}"}},
        "h": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}))
    servers = load_mcp_config(path, {"TOOLS": "/opt/t", "TOKEN": "s3cret", "HOST": "mcp.example", "EMPTY": ""})
    s = servers["s"]
    assert s.command == "/opt/t/bin/server"
    assert s.args == ("--token", "s3cret", "--mode=fast", "$HOME")  # only ${...} expands
    assert s.env == {"API_KEY": "s3cret", "EMPTY_DEFAULT": "fallback"}
    assert servers["h"].url == "https://mcp.example/mcp"
    assert servers["h"].headers == {"Authorization": "Bearer s3cret"}
    assert expand("${A:-x}${B}", {"A": "a", "B": "b"}) == "ab"


def test_missing_variable_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, '{"mcpServers": {\n  "s": {"command": "x",\n    "env": {"K": "${NOT_SET_ANYWHERE}"}}}}')
    with pytest.raises(PolicyError) as info:
        load_mcp_config(path, {})
    message = str(info.value)
    assert message.startswith(f"{path}:3:")
    assert "NOT_SET_ANYWHERE" in message and "'s'" in message


@pytest.mark.parametrize(("text", "where", "needle"), [
    ('{"mcpServers": {\n  "bad name!": {"command": "x"}}}', ":2:3:", "must match"),
    ('{"mcpServers": {\n  "s": {"command": "x",\n        "comand": "y"}}}', ":3:9:", "unknown key 'comand'"),
    ('{"mcpServers": {\n  "s": {"command": "x", "args": "not-a-list"}}}', ":2:", "'args' must be an array"),
    ('{"mcpServers": {\n  "s": {"command": "x", "args": ["a", 1]}}}', ":2:", "'args[1]' must be a string"),
    ('{"mcpServers": {\n  "s": {"type": "http"}}}', ":2:", "needs 'url'"),
    ('{"mcpServers": {\n  "s": {"type": "http", "url": "ftp://x"}}}', ":2:", "http:// or https://"),
    ('{"mcpServers": {\n  "s": {"type": "sse", "url": "http://x"}}}', ":2:", "'sse' is not supported"),
    ('{"mcpServers": {\n  "s": {"type": "http", "url": "http://x", "command": "y"}}}', ":2:", "unknown key 'command'"),
    ('{"mcpServers": {\n  "s": {"env": {"A": 1}, "command": "x"}}}', ":2:", "'env.A' must be a string"),
    ('{"mcpServers": {\n  "s": {}}}', ":2:", "needs 'command'"),
    ('{"mcpServers": []}', ":1:", "must be an object"),
    ('{"servers": {}}', ":1:2:", "unknown key 'servers'"),
    ('{"mcpServers": {"s": {"command": "x",}}', ":1:", "invalid JSONC"),
])
def test_bad_config_names_file_line_col(tmp_path: Path, text: str, where: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load_mcp_config(path, {})
    message = str(info.value)
    assert message.startswith(str(path) + where), message
    assert needle in message


def test_servers_from_mapping_in_a_policy_file(tmp_path: Path) -> None:
    text = '{\n  "rules": [],\n  "mcpServers": {\n    "s": {"command": "x", "bogus": 1}}}'
    located = parse(text, "policy.json")
    with pytest.raises(PolicyError) as info:
        servers_from_mapping(located.value["mcpServers"], "policy.json", {}, located=located, path=("mcpServers",))
    assert str(info.value).startswith("policy.json:4:27:")
    # Without positions the error still names the source and the server.
    with pytest.raises(PolicyError, match=r"^policy.json: mcpServers.s.bogus: .*unknown key 'bogus'"):
        servers_from_mapping(located.value["mcpServers"], "policy.json", {})
    good = servers_from_mapping({"s": {"command": "x"}}, "policy.json", {})
    assert good["s"].source == "policy.json"


def test_missing_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read MCP config"):
        load_mcp_config(tmp_path / "nope.json", {})


def test_describe_never_shows_secrets(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"mcpServers": {
        "s": {"command": "server", "args": ["--token", "${TOKEN}"], "env": {"API_KEY": "${TOKEN}", "PLAIN": "lit3ral"}},
        "h": {"type": "http", "url": "https://user:pw@mcp.example/mcp?key=${TOKEN}",
              "headers": {"Authorization": "Bearer ${TOKEN}"}}}}))
    servers = load_mcp_config(path, {"TOKEN": "tok-s3cret"})
    stdio, http = servers["s"].describe(), servers["h"].describe()
    for text in (stdio, http):
        assert "tok-s3cret" not in text
    assert "lit3ral" not in stdio and "API_KEY" in stdio and "PLAIN" in stdio and "${TOKEN}" in stdio
    assert "Authorization" in http and "pw" not in http and "mcp.example/mcp" in http
    assert str(path) in stdio

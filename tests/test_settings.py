"""Settings layering: CLI > AGENT_RUN_* env > --env-file files > policy file > defaults."""

from __future__ import annotations

import os

import pydantic
import pytest

from runner.engine.settings import DEFAULT_MODEL, load_settings, policy_layer


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for key in list(os.environ):
        if key.startswith(("OPENAI_", "AGENT_RUN_")):
            monkeypatch.delenv(key)
    # A .env in the cwd never counts; only files named with --env-file do.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / ".env").write_text("AGENT_RUN_MODEL=from-cwd\nAGENT_RUN_MAX_TURNS=99\n")
    monkeypatch.chdir(cwd)


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return path


def dotenv(ws, **values):
    (ws / ".env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))


def files(ws):
    """As `--env-file WS/.env` would name it."""
    return (ws / ".env",) if (ws / ".env").is_file() else ()


def test_defaults(ws):
    s = load_settings({}, files(ws), {})
    assert (s.model, s.max_turns, s.timeout, s.api_key, s.base_url) == (DEFAULT_MODEL, 50, 1800.0, None, None)
    assert (s.output_format, s.stream, s.max_retries) == ("text", False, 4)


def test_policy_over_defaults(ws):
    s = load_settings({}, files(ws), {"max_turns": 7, "timeout": 30.0})
    assert (s.max_turns, s.timeout) == (7, 30.0)


def test_dotenv_over_policy(ws):
    dotenv(ws, AGENT_RUN_MAX_TURNS=8)
    s = load_settings({}, files(ws), {"max_turns": 7, "timeout": 30.0})
    assert (s.max_turns, s.timeout) == (8, 30.0)


def test_env_over_dotenv(ws, monkeypatch):
    dotenv(ws, AGENT_RUN_MAX_TURNS=8, AGENT_RUN_MODEL="dotenv-model")
    monkeypatch.setenv("AGENT_RUN_MAX_TURNS", "9")
    s = load_settings({}, files(ws), {"max_turns": 7})
    assert (s.max_turns, s.model) == (9, "dotenv-model")


def test_cli_over_everything(ws, monkeypatch):
    dotenv(ws, AGENT_RUN_MAX_TURNS=8, AGENT_RUN_MODEL="dotenv-model")
    monkeypatch.setenv("AGENT_RUN_MAX_TURNS", "9")
    monkeypatch.setenv("AGENT_RUN_MODEL", "env-model")
    s = load_settings({"max_turns": 10, "model": "cli-model"}, ws, {"max_turns": 7})
    assert (s.max_turns, s.model) == (10, "cli-model")


def test_dotenv_does_not_touch_os_environ(ws):
    dotenv(ws, AGENT_RUN_MODEL="dotenv-model", OPENAI_API_KEY="sk-dotenv")
    assert load_settings({}, files(ws), {}).model == "dotenv-model"
    assert "AGENT_RUN_MODEL" not in os.environ
    assert "OPENAI_API_KEY" not in os.environ


def test_openai_variables_honoured(ws, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:1234/v1")
    s = load_settings({}, files(ws), {})
    assert s.api_key.get_secret_value() == "sk-openai"
    assert s.base_url == "http://localhost:1234/v1"


def test_openai_variables_from_dotenv(ws):
    dotenv(ws, OPENAI_API_KEY="sk-dotenv", OPENAI_BASE_URL="http://dotenv/v1")
    s = load_settings({}, files(ws), {})
    assert (s.api_key.get_secret_value(), s.base_url) == ("sk-dotenv", "http://dotenv/v1")


def test_agent_run_key_over_openai_key(ws, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("AGENT_RUN_API_KEY", "sk-agent")
    assert load_settings({}, files(ws), {}).api_key.get_secret_value() == "sk-agent"


def test_api_key_is_not_printed(ws, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    assert "sk-very-secret" not in repr(load_settings({}, files(ws), {}))


def test_env_values_are_coerced(ws, monkeypatch):
    monkeypatch.setenv("AGENT_RUN_STREAM", "true")
    monkeypatch.setenv("AGENT_RUN_OUTPUT_FORMAT", "json")
    monkeypatch.setenv("AGENT_RUN_RETRY_BASE_S", "0.01")
    s = load_settings({}, files(ws), {})
    assert (s.stream, s.output_format, s.retry_base_s) == (True, "json", 0.01)


@pytest.mark.parametrize(
    ("cli", "env"),
    [({"max_turns": 0}, {}), ({}, {"AGENT_RUN_TIMEOUT": "-1"}), ({}, {"AGENT_RUN_OUTPUT_FORMAT": "xml"})],
)
def test_invalid_values_rejected(ws, monkeypatch, cli, env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(pydantic.ValidationError):
        load_settings(cli, files(ws), {})


def test_policy_layer_maps_budget():
    sections = {"budget": {"maxTurns": 3, "timeoutSeconds": 12.5, "maxTokens": 100}, "truncation": {"maxLines": 5}}
    assert policy_layer(sections) == {"max_turns": 3, "timeout": 12.5, "max_tokens": 100}
    assert policy_layer({"budget": {"maxCostUsd": 0.5}, "compaction": {"contextWindow": 32768}}) == {
        "max_cost_usd": 0.5, "context_window": 32768}
    assert policy_layer({"budget": {"maxTurns": 3}}) == {"max_turns": 3}
    assert policy_layer({}) == {}


def test_policy_layer_feeds_load_settings(ws):
    s = load_settings({}, files(ws), policy_layer({"budget": {"maxTurns": 4, "timeoutSeconds": 9}}))
    assert (s.max_turns, s.timeout) == (4, 9.0)


def test_a_dotenv_not_named_is_never_read(ws):
    dotenv(ws, AGENT_RUN_MODEL="dotenv-model", OPENAI_BASE_URL="http://attacker/v1")
    s = load_settings({}, (), {})
    assert (s.model, s.base_url) == (DEFAULT_MODEL, None)

"""Settings, layered: CLI flag > AGENT_RUN_* environment > `--env-file` files > policy file > the user's config
file ($XDG_CONFIG_HOME/agent-run/config.toml: runner/engine/userconf.py) > defaults.

pydantic-settings does the first three; the policy layer is one more source
placed below them. `OPENAI_API_KEY` / `OPENAI_BASE_URL` are read as the SDK reads them.
A workspace `.env` is never read: it is repository content (docs/threat-model.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from runner.engine.userconf import UserConfigSource, user_config_file

DEFAULT_MODEL = "gpt-4o-mini"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENT_RUN_", extra="ignore", populate_by_name=True)

    model: str = DEFAULT_MODEL
    # --fallback-model, in order (AGENT_RUN_FALLBACK_MODELS: comma-separated, not JSON — NoDecode): the models the
    # run goes on with, on the same endpoint and key, when the one it is on stays down (runner/model/fallback.py).
    fallback_models: Annotated[list[str], NoDecode] = Field(default_factory=list)
    api_key: SecretStr | None = Field(None, validation_alias=AliasChoices("AGENT_RUN_API_KEY", "OPENAI_API_KEY"))
    base_url: str | None = Field(None, validation_alias=AliasChoices("AGENT_RUN_BASE_URL", "OPENAI_BASE_URL"))
    max_turns: int = Field(50, ge=1)
    timeout: float = Field(1800.0, gt=0, description="whole run, wall clock, seconds")
    output_format: Literal["text", "json", "stream-json"] = "text"
    stream: bool = False
    max_retries: int = Field(4, ge=0)
    retry_base_s: float = Field(1.0, ge=0)
    retry_cap_s: float = Field(30.0, ge=0)
    request_timeout_s: float = Field(300.0, gt=0)
    # A model response's decoded size (a gzip body is inflated in bounded steps and counted): over it, the
    # response is a bad one (retried like a 5xx). Far above any real completion.
    max_response_bytes: int = Field(64 * 1024 * 1024, ge=1024, description="one model response, decoded")
    max_retry_wait_s: float = Field(300.0, ge=0, description="the longest Retry-After a run waits for")
    bash_timeout_s: float = Field(120.0, gt=0)
    mcp_start_timeout_s: float = Field(30.0, gt=0, description="an MCP server's start, until its tools are listed")
    mcp_call_timeout_s: float = Field(120.0, gt=0, description="one MCP tool call")
    max_tokens: int | None = Field(None, ge=1, description="prompt + completion tokens, whole run")
    # Subagents (`task`, docs/subagents.md): depth 0 offers no `task` tool; 1, a child cannot delegate.
    subagent_max_depth: int = Field(1, ge=0, le=3)
    subagent_max_calls: int = Field(8, ge=0, description="task calls per run, every depth together")
    subagent_max_turns: int = Field(30, ge=1, description="a child's turns when its profile sets none")
    subagent_timeout_s: float = Field(300.0, gt=0, description="one child's wall clock (within the run's)")
    max_cost_usd: float | None = Field(None, gt=0)
    context_window: int | None = Field(None, ge=1, description="override the model database (genai-prices)")
    # Stage 3 (a summary): off, stages 1-2 still trim and clear, and a run that would pass the window ends exit 5
    compaction: bool = True
    compaction_max_messages: int | None = Field(None, ge=4, description="a summary when the conversation has more")
    # A summary due by the token share waits while the provider's prompt cache is warm, up to this share
    compaction_emergency_at: float = Field(0.95, gt=0, le=1)
    # tiktoken:PATH, a .tiktoken file: the context is counted in its tokens, not chars/4 (runner/context/tokenizer.py)
    tokenizer: str | None = None
    compaction_cache_ttl_s: float = Field(300.0, ge=0, description="how long a prompt cache stays warm")
    # Sampling: sent only when set, and dropped for the run if the endpoint rejects one (runner/model/retry.py).
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    max_output_tokens: int | None = Field(None, ge=1, description="per request (max_tokens is the run's budget)")
    seed: int | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    # How a call a small model writes as text instead of in tool_calls is read (runner/model/text_calls.py):
    # auto, narrowly and only until the run receives tool_calls; on, every form; off, never
    text_tool_calls: Literal["auto", "on", "off"] = "auto"
    # user: each tool result is sent as a user message, for a server whose chat format drops `tool` messages
    # (llama-cpp-python's chatml-function-calling: the model never sees a result and repeats its call)
    tool_results: Literal["tool", "user"] = "tool"
    # The task's check drives the loop (runner/run/check.py): a failed check goes back to the model up to N attempts
    # in all (1: the first verdict stands); a task's front matter may only lower it
    check_attempts: int = Field(3, ge=1, description="the task's check, run after each answer, at most N times")
    # A final answer the answer rules refuse (runner/guards/answers.py) is sent back, at most N times a run (0: never)
    answer_nudges: int = Field(2, ge=0, description="non-answers sent back to the model, per run")
    # Calls of one reply that run at once (runner/engine/batch.py): read-only calls, and `task` children. 1: in turn.
    parallel_calls: int = Field(4, ge=1, le=64, description="read-only calls of one reply at once")
    parallel_agents: int = Field(4, ge=1, le=64, description="task children of one reply at once")
    # --no-project-instructions: the AGENTS.md chain stays out of the prompt (runner/workspace/instructions.py)
    no_project_instructions: bool = False

    @field_validator("fallback_models", mode="before")
    @classmethod
    def _names(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.split(",")
        return [n.strip() for n in value if isinstance(n, str) and n.strip()] if isinstance(value, list | tuple) \
            else value


MODEL_KEYS = {"temperature": "temperature", "topP": "top_p", "maxOutputTokens": "max_output_tokens", "seed": "seed",
              "reasoningEffort": "reasoning_effort"}
MODEL_PARAMS = tuple(MODEL_KEYS.values())
SUBAGENT_KEYS = {"maxDepth": "subagent_max_depth", "maxCalls": "subagent_max_calls", "maxTurns": "subagent_max_turns",
                 "timeoutSeconds": "subagent_timeout_s"}

COMPACTION_KEYS = {"contextWindow": "context_window", "enabled": "compaction",
                   "maxMessages": "compaction_max_messages", "emergencyAt": "compaction_emergency_at",
                   "cacheTtlSeconds": "compaction_cache_ttl_s"}


def model_params(settings: Settings) -> dict[str, Any]:
    """The sampling parameters set, for the request and for run_started."""
    return {k: getattr(settings, k) for k in MODEL_PARAMS if getattr(settings, k) is not None}


def policy_layer(sections: dict[str, Any]) -> dict[str, Any]:
    """The settings a policy file may set (`budget`, `model`, `subagents`, and the
    `compaction` keys of COMPACTION_KEYS)."""
    budget = sections.get("budget", {})
    out: dict[str, Any] = {}
    if "maxTurns" in budget:
        out["max_turns"] = budget["maxTurns"]
    if "timeoutSeconds" in budget:
        out["timeout"] = budget["timeoutSeconds"]
    if "maxTokens" in budget:
        out["max_tokens"] = budget["maxTokens"]
    if "maxCostUsd" in budget:
        out["max_cost_usd"] = budget["maxCostUsd"]
    for key, name in MODEL_KEYS.items():  # the policy's `model` section, camelCase
        if key in sections.get("model", {}):
            out[name] = sections["model"][key]
    for key, name in SUBAGENT_KEYS.items():
        if key in sections.get("subagents", {}):
            out[name] = sections["subagents"][key]
    for key, name in COMPACTION_KEYS.items():
        if key in sections.get("compaction", {}):
            out[name] = sections["compaction"][key]
    return out


def load_settings(cli: dict[str, Any], env_files: tuple[Path, ...], policy_values: dict[str, Any]) -> Settings:
    """Build Settings from every layer. `cli` holds only the flags actually given."""

    class Layered(Settings):
        @classmethod
        def settings_customise_sources(
            cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, dotenv_settings,
                    InitSettingsSource(settings_cls, init_kwargs=policy_values),
                    UserConfigSource(settings_cls, user_config_file()))

    return Layered(_env_file=env_files or None, **cli)  # type: ignore[call-arg]

"""A run's metrics: the GenAI client metrics (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`) and
agent-run's own (`agent_run.cost`, `agent_run.tool_calls`, `agent_run.denials`, `agent_run.runs`). Recorded as the
events come (SpanBook calls the hooks), exported once at the run's end. Attribute values are masked like span
attributes: a tool's name or a model's could hold anything a configuration put there."""

from __future__ import annotations

from typing import Any

from opentelemetry.metrics import Meter

from runner.core.events import ModelResponse
from runner.record.mask import Masker
from runner.telemetry.spans import PROVIDER

# The bucket boundaries the GenAI conventions recommend for these two histograms.
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]


class RunMetrics:
    def __init__(self, meter: Meter, masker: Masker) -> None:
        self._masker = masker
        self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}",
                                             description="Tokens used per model request, by type (input, output)",
                                             explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s",
                                               description="Duration of each model request",
                                               explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self.cost = meter.create_counter("agent_run.cost", unit="USD", description="What the run's model requests cost")
        self.tool_calls = meter.create_counter("agent_run.tool_calls", unit="{call}",
                                               description="Tool calls, by tool and policy decision")
        self.denials = meter.create_counter("agent_run.denials", unit="{call}",
                                            description="Tool calls the policy denied")
        self.runs = meter.create_counter("agent_run.runs", unit="{run}", description="Runs, by status and exit code")

    def _attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {k: self._masker.mask(v)[0] if isinstance(v, str) else v for k, v in attrs.items() if v is not None}

    def _model(self, model: str) -> dict[str, Any]:
        return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER, "gen_ai.request.model": model}

    def on_response(self, event: ModelResponse, model: str) -> None:
        base = self._attrs({**self._model(model), "gen_ai.response.model": model})
        usage = event.usage or {}
        for kind, key in (("input", "prompt_tokens"), ("output", "completion_tokens")):
            value = usage.get(key)
            if isinstance(value, int) and value >= 0:
                self.tokens.record(value, {**base, "gen_ai.token.type": kind})
        self.duration.record(max(0.0, float(event.duration_s)), base)

    def on_failed_request(self, model: str, seconds: float) -> None:
        self.duration.record(max(0.0, seconds), self._attrs({**self._model(model), "error.type": "no_response"}))

    def on_tool_done(self, tool: str, decision: str) -> None:
        self.tool_calls.add(1, self._attrs({"tool": tool, "decision": decision}))

    def on_denied(self, tool: str, domain: str) -> None:
        self.denials.add(1, self._attrs({"tool": tool, "domain": domain}))

    def on_run(self, status: str, exit_code: int) -> None:
        self.runs.add(1, self._attrs({"status": status, "exit_code": exit_code}))
        # A run without tool calls or denials still reports both, as zero: a dashboard's sum starts from it.
        self.tool_calls.add(0)
        self.denials.add(0)

    def on_cost(self, usd: float, model: str) -> None:
        if usd >= 0:
            self.cost.add(usd, self._attrs({"gen_ai.request.model": model}))

"""A run's OpenTelemetry pipeline: an SDK tracer and meter of its own (never the process-global providers, which a
library such as the MCP SDK may also touch), the OTLP/HTTP exporters configured by the job's `OTEL_*` environment,
and the end-of-run export, bounded in time.

Imported only when telemetry is on (runner/telemetry/start.py): this module is where the SDK is loaded.

Spans go out in batches while the run goes on (the SDK's BatchSpanProcessor, on its own thread: a slow collector
never slows the run), so a long run can be watched as it works; metrics go out once, at the end. `finish` is called
after summary.json is written: whatever the collector does, the record and the exit code are already settled."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from runner.core.events import Event
from runner.record.mask import Masker
from runner.telemetry.config import (
    EXPORT_BOUND_S,
    SERVICE_NAME,
    ci_attributes,
    collector_address,
    names_service,
    traces_url,
)
from runner.telemetry.metrics import RunMetrics
from runner.telemetry.spans import SpanBook

PROBE_TIMEOUT_S = 1.0  # a TCP connect to the collector, at the run's start, on its own thread


class _Spans(OTLPSpanExporter):
    """The OTLP span exporter, remembering whether its last export got through."""

    failed: str | None = None

    def export(self, spans: Any) -> SpanExportResult:
        result = super().export(spans)
        self.failed = None if result is SpanExportResult.SUCCESS else "the collector did not take the spans"
        return result


class _Metrics(OTLPMetricExporter):
    failed: str | None = None

    def export(self, metrics_data: Any, timeout_millis: float | None = 10_000, **kwargs: Any) -> MetricExportResult:
        result = super().export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        self.failed = None if result is MetricExportResult.SUCCESS else "the collector did not take the metrics"
        return result


class Telemetry:
    """One run's telemetry: `consume` every event, `unreachable()` before run_finished (a `warning` event when the
    collector could not be reached), `finish(summary)` once summary.json is written."""

    def __init__(self, environ: Mapping[str, str], masker: Masker, run_id: str) -> None:
        self._masker = masker
        # The exporter logs each failed attempt: the run reports a failed export once, its own way.
        otel_log = logging.getLogger("opentelemetry")
        if not otel_log.handlers:
            otel_log.addHandler(logging.NullHandler())
        otel_log.propagate = False
        resource = _resource(environ, masker)
        self._spans_out = _Spans(timeout=EXPORT_BOUND_S)
        self._metrics_out = _Metrics(timeout=EXPORT_BOUND_S)
        self._tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self._tracer_provider.add_span_processor(BatchSpanProcessor(self._spans_out))
        self._reader = PeriodicExportingMetricReader(self._metrics_out, export_interval_millis=float("inf"))
        meter_provider = MeterProvider(resource=resource, metric_readers=[self._reader], shutdown_on_exit=False)
        self._metrics = RunMetrics(meter_provider.get_meter("agent-run"), masker)
        self._book = SpanBook(self._tracer_provider.get_tracer("agent-run"), masker, _parent(environ), self._metrics)
        self._lock = threading.Lock()
        self.broken: str | None = None  # a bug of ours in the consumer: telemetry stops, the run does not
        self._run_id = run_id
        self._probe = _Probe(traces_url(environ), environ)

    def consume(self, event: Event) -> None:
        if self.broken is not None:
            return
        try:
            with self._lock:
                self._book(event)
        except Exception as exc:  # never the run's problem: reported once at the end
            self.broken = f"{type(exc).__name__}: {exc}"

    def unreachable(self) -> str | None:
        """Why the collector looks unreachable (the start's probe), or None."""
        return self._probe.result()

    def finish(self, summary: Mapping[str, Any], warn: Callable[[str], None]) -> None:
        """Export everything, waiting at most EXPORT_BOUND_S; a failure is `warn`ed, never raised."""
        try:
            self._export(summary, warn)
        except Exception as exc:  # a bug of ours: the run's record and exit code are already settled
            warn(f"internal error: {type(exc).__name__}: {exc}")

    def _export(self, summary: Mapping[str, Any], warn: Callable[[str], None]) -> None:
        deadline = time.monotonic() + EXPORT_BOUND_S
        try:
            with self._lock:
                self._summarized(summary)
        except Exception as exc:
            self.broken = self.broken or f"{type(exc).__name__}: {exc}"
        millis = int(EXPORT_BOUND_S * 1000)
        jobs = [threading.Thread(target=self._tracer_provider.force_flush, args=(millis,), daemon=True),
                threading.Thread(target=self._reader.force_flush, args=(millis,), daemon=True)]
        for job in jobs:
            job.start()
        for job in jobs:  # a collector that hangs is left behind: the process exits without waiting for it
            job.join(max(0.0, deadline - time.monotonic()))
        late = any(job.is_alive() for job in jobs)
        problems = [p for p in (self.broken and f"internal error: {self.broken}",
                                late and f"the export did not finish within {EXPORT_BOUND_S:g} s",
                                self._spans_out.failed, self._metrics_out.failed) if p]
        if problems:
            warn(self._masker.mask("; ".join(problems))[0])

    def _summarized(self, summary: Mapping[str, Any]) -> None:
        usage = summary.get("usage") or {}
        cost = usage.get("cost_usd")
        if isinstance(cost, int | float):
            self._metrics.on_cost(float(cost), self._book.model)
        self._book.close({"agent_run.run_id": self._run_id,
                          "agent_run.cost_usd": float(cost) if isinstance(cost, int | float) else None,
                          "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
                          "gen_ai.usage.output_tokens": usage.get("completion_tokens")})


def _resource(environ: Mapping[str, str], masker: Masker) -> Resource:
    """service.name (agent-run unless the job names it), service.version and the CI's identity, merged with the
    job's OTEL_RESOURCE_ATTRIBUTES by the SDK; every value masked."""
    attrs: dict[str, Any] = dict(ci_attributes(environ))
    if not names_service(environ):
        attrs["service.name"] = SERVICE_NAME
    with contextlib.suppress(PackageNotFoundError):
        attrs["service.version"] = version("agent-run")
    made = Resource.create(attrs)
    masked = {k: masker.mask(v)[0] if isinstance(v, str) else v for k, v in made.attributes.items()}
    return Resource(masked, made.schema_url)


def _parent(environ: Mapping[str, str]) -> Any:
    """TRACEPARENT (and TRACESTATE) in the job's environment: the CI's own trace, which the run's span joins."""
    carrier = {k: environ[v] for k, v in (("traceparent", "TRACEPARENT"), ("tracestate", "TRACESTATE"))
               if environ.get(v)}
    return TraceContextTextMapPropagator().extract(carrier) if "traceparent" in carrier else None


class _Probe:
    """A TCP connect to the collector at the start, on a thread: a collector that is down is told in the run's own
    record (a `warning` event before run_finished), while the export itself happens only after the record is
    sealed. Skipped behind an HTTP proxy, where a direct connect says nothing of the export's path."""

    def __init__(self, url: str, environ: Mapping[str, str]) -> None:
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        address = collector_address(url)
        if address is None or _proxied(url, address[0]):
            return
        self._address = address
        self._thread = threading.Thread(target=self._run, daemon=True, name="otel-probe")
        self._thread.start()

    def _run(self) -> None:
        host, port = self._address
        try:
            socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
        except OSError as exc:
            self._error = (f"the OpenTelemetry collector at {host}:{port} cannot be reached "
                           f"({exc.strerror or exc}): this run's spans and metrics will likely be lost (the run "
                           "itself is not affected)")

    def result(self) -> str | None:
        if self._thread is None:
            return None
        self._thread.join(PROBE_TIMEOUT_S)  # a name that takes longer to resolve is not waited for
        return self._error


def _proxied(url: str, host: str) -> bool:
    scheme = url.split(":", 1)[0]
    return bool(urllib.request.getproxies().get(scheme)) and not urllib.request.proxy_bypass(host)


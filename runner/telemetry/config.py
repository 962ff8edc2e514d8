"""Whether a run exports telemetry, and what it says about where it runs: pure reads of the job's environment,
never the workspace's (threat model: the job environment is trusted, a repository's `.env` is not). Nothing of
OpenTelemetry is imported here, so a run with telemetry off starts exactly as before."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from urllib.parse import urlsplit

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
EXPORT_BOUND_S = 2.0  # the most a run's end waits for its export (after summary.json is written)
SERVICE_NAME = "agent-run"

# The CI's identity as resource attributes (OpenTelemetry's `cicd.*` and `vcs.*` conventions): first variable set
# wins. GitHub Actions, then GitLab CI.
_CI_ATTRIBUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vcs.repository.name", ("GITHUB_REPOSITORY", "CI_PROJECT_PATH")),
    ("cicd.pipeline.name", ("GITHUB_WORKFLOW", "CI_PIPELINE_NAME")),
    ("cicd.pipeline.run.id", ("GITHUB_RUN_ID", "CI_PIPELINE_ID")),
    ("cicd.pipeline.task.name", ("GITHUB_JOB", "CI_JOB_NAME")),
    ("cicd.pipeline.task.run.id", ("CI_JOB_ID",)),
    ("vcs.ref.head.revision", ("GITHUB_SHA", "CI_COMMIT_SHA")),
    ("vcs.ref.head.name", ("GITHUB_REF_NAME", "CI_COMMIT_REF_NAME")),
)


def wanted(environ: Mapping[str, str]) -> bool:
    """On when an OTLP endpoint is set, `OTEL_SDK_DISABLED` is not `true` and the `otel` extra is installed. The
    environment is checked first: with no endpoint, not even the extra's presence is looked up."""
    if not any(environ.get(name, "").strip() for name in ENDPOINT_VARS):
        return False
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return all(_installed(name) for name in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken install: as good as absent
        return False


def traces_url(environ: Mapping[str, str]) -> str:
    """Where spans go, as the OTLP exporter resolves it (the signal's own variable, else the base + v1/traces)."""
    own = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if own:
        return own
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base + ("" if base.endswith("/") else "/") + "v1/traces"


def collector_address(url: str) -> tuple[str, int] | None:
    """host and port of an http(s) endpoint, for the reachability probe; None when it names neither."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname, port


def ci_attributes(environ: Mapping[str, str]) -> dict[str, str]:
    """The CI's identity: repository, workflow, run id, job, revision (each only where the CI sets it)."""
    out: dict[str, str] = {}
    for key, names in _CI_ATTRIBUTES:
        value = next((environ[n] for n in names if environ.get(n)), None)
        if value:
            out[key] = value
    server, repo = environ.get("GITHUB_SERVER_URL"), environ.get("GITHUB_REPOSITORY")
    url = f"{server.rstrip('/')}/{repo}" if server and repo else environ.get("CI_PROJECT_URL")
    if url:
        out["vcs.repository.url.full"] = url
    if environ.get("GITHUB_RUN_ATTEMPT"):
        out["agent_run.ci.run_attempt"] = environ["GITHUB_RUN_ATTEMPT"]
    return out


def names_service(environ: Mapping[str, str]) -> bool:
    """The job names the service itself (OTEL_SERVICE_NAME or service.name in OTEL_RESOURCE_ATTRIBUTES)."""
    listed = [item.split("=", 1)[0].strip() for item in environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(",")]
    return bool(environ.get("OTEL_SERVICE_NAME", "").strip()) or "service.name" in listed

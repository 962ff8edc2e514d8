"""The recorder's one entry into telemetry. Kept apart from export.py so that a run with telemetry off never
imports the OpenTelemetry SDK: export.py is imported here, inside the call, and only when it is wanted."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.record.mask import Masker
from runner.telemetry.config import wanted

if TYPE_CHECKING:
    from runner.telemetry.export import Telemetry


def start_telemetry(environ: Mapping[str, str], masker: Masker, run_id: str) -> Telemetry | None:
    """The run's telemetry when the job's environment turns it on (runner/telemetry/config.py), else None. A
    pipeline that cannot be set up (a broken install, a configuration the SDK refuses) costs the telemetry, never
    the run: a warning on stderr, and the run goes on without it."""
    if not wanted(environ):
        return None
    try:
        # Here and only here: loading the SDK costs start-up time that a run without telemetry must not pay.
        from runner.telemetry.export import Telemetry

        return Telemetry(environ, masker, run_id)
    except Exception as exc:
        why = masker.mask(f"{type(exc).__name__}: {exc}")[0]
        print(f"agent-run: warning: telemetry_export_failed: telemetry is off for this run: {why}", file=sys.stderr)
        return None

"""The recorder's one entry into telemetry. Kept apart from export.py so that a run with telemetry off never
imports the OpenTelemetry SDK: export.py is imported here, inside the call, and only when it is wanted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.record.mask import Masker
from runner.telemetry.config import wanted

if TYPE_CHECKING:
    from runner.telemetry.export import Telemetry


def start_telemetry(environ: Mapping[str, str], masker: Masker, run_id: str) -> Telemetry | None:
    """The run's telemetry when the job's environment turns it on (runner/telemetry/config.py), else None."""
    if not wanted(environ):
        return None
    # Here and only here: loading the SDK costs start-up time that a run without telemetry must not pay.
    from runner.telemetry.export import Telemetry

    return Telemetry(environ, masker, run_id)

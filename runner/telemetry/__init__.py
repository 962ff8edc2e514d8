"""OpenTelemetry traces and metrics of a run (docs/telemetry.md): an event consumer like report/, on only when the
`otel` extra is installed and the job's environment names an OTLP endpoint; off, nothing of the SDK is imported
(start.py is the recorder's one entry). May import model and below (it reads events and masks with record/)."""

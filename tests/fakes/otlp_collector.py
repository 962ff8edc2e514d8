"""An OpenTelemetry collector on loopback: OTLP/HTTP (protobuf) at /v1/traces and /v1/metrics, decoded with the
official protobuf definitions (opentelemetry-proto), as a real collector's OTLP receiver does. It refuses what one
refuses (another path, another content type, a body that does not decode) and answers a success with the
protobuf response message.

`hold` keeps every request waiting (a collector that is up but slow) until the test ends."""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

PATHS = {"/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
         "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse)}


def value_of(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value_of(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    return getattr(v, kind) if kind else None


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: value_of(kv.value) for kv in kvs if isinstance(kv, KeyValue)}


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status_code: int
    resource: dict[str, Any]


class Collector:
    def __init__(self, hold: bool = False) -> None:
        self.bodies: list[bytes] = []  # every request body as received (decompressed): what a secret must not be in
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.refused: list[str] = []
        self._hold = threading.Event() if hold else None
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                collector._handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Collector:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._hold is not None:
            self._hold.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        if h.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self._hold is not None:
            self._hold.wait()
        types = PATHS.get(h.path)
        if types is None or h.headers.get("Content-Type") != "application/x-protobuf":
            self._refuse(h, 404 if types is None else 415, f"{h.path} {h.headers.get('Content-Type')}")
            return
        request = types[0]()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            self._refuse(h, 400, f"{h.path}: {exc}")
            return
        with self._lock:
            self.bodies.append(body)
            (self.traces if h.path == "/v1/traces" else self.metrics).append(request)
        out = types[1]().SerializeToString()
        h.send_response(200)
        h.send_header("Content-Type", "application/x-protobuf")
        h.send_header("Content-Length", str(len(out)))
        h.end_headers()
        h.wfile.write(out)

    def _refuse(self, h: BaseHTTPRequestHandler, status: int, why: str) -> None:
        with self._lock:
            self.refused.append(why)
        h.send_response(status)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def spans(self) -> list[Span]:
        out = []
        with self._lock:
            requests = list(self.traces)
        for request in requests:
            for rs in request.resource_spans:
                resource = attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    out.extend(Span(s.name, s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.kind,
                                    s.start_time_unix_nano, s.end_time_unix_nano, attributes(s.attributes),
                                    s.status.code, resource) for s in ss.spans)
        return out

    def metric_points(self) -> dict[str, list[dict[str, Any]]]:
        """name -> its data points, each {attributes, value (a sum's), count and sum (a histogram's), unit}."""
        out: dict[str, list[dict[str, Any]]] = {}
        with self._lock:
            requests = list(self.metrics)
        for request in requests:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        out.setdefault(m.name, []).extend(_points(m))
        return out


def _points(m: Any) -> list[dict[str, Any]]:
    kind = m.WhichOneof("data")
    if kind == "sum":
        return [{"attributes": attributes(p.attributes), "unit": m.unit,
                 "value": p.as_double if p.WhichOneof("value") == "as_double" else p.as_int}
                for p in m.sum.data_points]
    if kind == "histogram":
        return [{"attributes": attributes(p.attributes), "unit": m.unit, "count": p.count, "sum": p.sum}
                for p in m.histogram.data_points]
    return [{"kind": kind}]

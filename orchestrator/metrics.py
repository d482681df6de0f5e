"""The orchestrator's Prometheus metrics and its small HTTP face: /metrics and /healthz."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)


class ServiceMetrics:
    """One registry per service (tests run several services in one process)."""

    def __init__(self, spool_depth: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self.campaigns = Counter(
            "tpcbench_campaigns",
            "Campaigns run, by final state and trigger.",
            ["state", "trigger"],
            registry=self.registry,
        )
        self.measurements = Counter(
            "tpcbench_measurements",
            "Measurements taken: ok (every transfer succeeded) or failed.",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in ("ok", "failed"):
            self.measurements.labels(outcome)  # present from the start, at 0
        self.last_success = Gauge(
            "tpcbench_last_success_timestamp_seconds",
            "When the last campaign finished completely (Unix time).",
            registry=self.registry,
        )
        self.campaign_running = Gauge(
            "tpcbench_campaign_running",
            "1 while a campaign runs.",
            registry=self.registry,
        )
        self.next_campaign = Gauge(
            "tpcbench_next_campaign_timestamp_seconds",
            "When the next scheduled campaign starts (Unix time).",
            registry=self.registry,
        )
        self.spool_depth = Gauge(
            "tpcbench_spool_depth",
            "Measurements in the local spool, not yet acknowledged by the webapp.",
            registry=self.registry,
        )
        self.spool_depth.set_function(lambda: float(spool_depth()))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class Exposition(Protocol):
    def exposition(self) -> bytes:
        """The metrics in Prometheus' text format."""
        ...


class MetricsServer:
    """Serves /metrics (Prometheus text format) and /healthz (JSON) on its own thread."""

    def __init__(
        self,
        metrics: Exposition,
        health: Callable[[], tuple[bool, dict[str, Any]]],
        bind: str = "127.0.0.1",
        port: int = 9105,
    ) -> None:
        handler = _handler(metrics, health)
        self._httpd = ThreadingHTTPServer((bind, port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="metrics-http", daemon=True
        )

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(
    metrics: Exposition, health: Callable[[], tuple[bool, dict[str, Any]]]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass  # scrapes every 15 s would drown the service's own log

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, metrics.exposition(), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                healthy, details = health()
                body = json.dumps({"status": "ok" if healthy else "unhealthy", **details})
                self._send(200 if healthy else 503, body.encode(), "application/json")
            else:
                self._send(404, b"not found: try /metrics or /healthz\n", "text/plain")

    return Handler

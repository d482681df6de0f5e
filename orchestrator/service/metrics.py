"""The orchestrator's Prometheus metrics and its small HTTP face: /metrics and /healthz."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

from orchestrator.http_service import Answer, HttpService


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

    def watch_campaign(self, journal: Callable[[], dict[str, Any]]) -> None:
        """Gauges read at each scrape from the current (or last) campaign's journal: its
        estimate and cycle (set before it measures: rotation.py) and its counters."""

        def fit(*path: str) -> Callable[[], float]:
            def value() -> float:
                item: Any = journal().get("cycle_fit") or {}
                for key in path:
                    item = item.get(key) if isinstance(item, dict) else None
                return float(item) if isinstance(item, int | float) else float("nan")

            return value

        gauges = (
            ("tpcbench_campaign_estimate_seconds", "The campaign's estimated duration in its "
             "cycle (the simulated schedule).", ("cycle_estimate", "makespan")),
            ("tpcbench_campaign_bound_seconds", "The planner's bound for the campaign's "
             "measurements in its cycle (the busiest node's work).", ("cycle_estimate", "bound")),
            ("tpcbench_campaign_cycle_seconds", "The schedule's cycle (NaN: not scheduled).",
             ("cycle_seconds",)),
            ("tpcbench_rotation_cycles", "Cycles in which every ordered pair is measured once "
             "(k; 1: the whole mesh each cycle).", ("k",)),
        )  # fmt: skip
        for name, help_text, path in gauges:
            Gauge(name, help_text, registry=self.registry).set_function(fit(*path))
        counters = Gauge(
            "tpcbench_campaign_measurements",
            "The current or last campaign's measurements: planned, done, failed, missed (not "
            "started before the next cycle), late (ended after it).",
            ["state"],
            registry=self.registry,
        )
        for state in ("planned", "done", "failed", "missed", "late"):
            counters.labels(state).set_function(
                lambda state=state: float(journal().get(state) or 0)
            )

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
        def healthz(query: str) -> Answer:
            healthy, details = health()
            body = {"status": "ok" if healthy else "unhealthy", **details}
            return Answer.json(200 if healthy else 503, body)

        routes = {
            "/metrics": lambda query: Answer(200, metrics.exposition(), CONTENT_TYPE_LATEST),
            "/healthz": healthz,
        }
        # scrapes every 15 s would drown the service's own log
        self._service = HttpService((bind, port), routes, log_requests=False)
        self.port = self._service.port

    def start(self) -> MetricsServer:
        self._service.start("metrics-http")
        return self

    def close(self) -> None:
        self._service.close()

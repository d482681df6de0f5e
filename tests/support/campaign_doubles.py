"""Stand-ins for a campaign's collaborators, for tests of the campaign's own logic.

They stand only for what the test does not look at: a reporter that keeps what it is given
(instead of the webapp), a discovery with fixed endpoints (instead of the lab or the
cluster), and a measurement that moves nothing (instead of the transfer tools).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from orchestrator.endpoints import Endpoint
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.spec import MeasurementRequest


class CollectingReporter:
    """Keeps every measurement, result and campaign state it is asked to report."""

    def __init__(self) -> None:
        self.measurements: list[dict[str, Any]] = []
        self.results: list[tuple[str, dict[str, Any]]] = []
        self.states: list[str] = []

    def report(self, measurement: dict[str, Any]) -> str:
        self.measurements.append(measurement)
        return "sent"

    def report_result(self, kind: str, result: dict[str, Any]) -> str:
        self.results.append((kind, result))
        return "sent"

    def report_campaign(self, campaign: str, payload: dict[str, Any]) -> str:
        self.states.append(payload["state"])
        return "sent"


class FixedDiscovery:
    """Discovery that always finds these endpoints."""

    def __init__(self, endpoints: list[Endpoint]) -> None:
        self.endpoints = endpoints

    def discover(self) -> list[Endpoint]:
        return list(self.endpoints)


def instant_measurement(request: MeasurementRequest, **options: Any) -> MeasurementRecord:
    """A measurement of the request that took no time and moved nothing (no transfers)."""
    now, spec = datetime.now(UTC), request.spec
    return MeasurementRecord(
        str(uuid.uuid4()), options.get("campaign"), spec.src, spec.dst, spec.protocol,
        spec.streams, 1024, None, now, now, [], auth=spec.auth, client=spec.client,
        checksum=spec.checksum,
    )  # fmt: skip

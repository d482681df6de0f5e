"""What a campaign yields: its progress after each measurement, its result, and the record of
a measurement that could not be taken (every transfer failed, with the reason: data, not an
exception)."""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from orchestrator.campaign.rtt_check import RttCheck
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.spec import MeasurementSpec
from orchestrator.transfers.record import Clock, TransferRecord


@dataclass
class CampaignProgress:
    """What a progress display needs after each measurement."""

    done: int
    total: int
    last: dict[str, Any] | None = None
    report: str | None = None  # sent | spooled | rejected


@dataclass
class CampaignResult:
    uuid: str
    state: str  # finished | interrupted | failed
    nodes: list[str]
    total: int
    measurements: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""
    rtt_checks: list[RttCheck] = field(default_factory=list)  # pairs with an RTT target
    lookups: int = 0  # redirector lookups taken and reported (--lookups)

    @property
    def rtt_off(self) -> list[RttCheck]:
        """Pairs whose RTT before the campaign was not within 1 ms or 5% of their target."""
        return [c for c in self.rtt_checks if c.within_target is False]

    @property
    def ok(self) -> int:
        return sum(1 for m in self.measurements if m["failed"] == 0 and m["succeeded"] > 0)

    @property
    def failed(self) -> int:
        return len(self.measurements) - self.ok


def failed_record(
    spec: MeasurementSpec,
    transfers: int,
    file_size: int,
    campaign: str,
    error_class: str,
    message: str,
    rtt_ms: float | None = None,
) -> MeasurementRecord:
    """A measurement that could not be taken, as data: every transfer failed, and why."""
    clock = Clock()
    now = clock.now()
    records = [
        TransferRecord(
            index=i,
            protocol=spec.protocol,
            source_url="",
            destination_url="",
            start=now,
            end=now,
            started=clock.wall(now),
            ended=clock.wall(now),
            bytes=0,
            outcome="failure",
            error_class=error_class,  # type: ignore[arg-type]
            message=message,
        )
        for i in range(transfers)
    ]
    return MeasurementRecord(
        uuid=str(uuidlib.uuid4()),
        campaign=campaign,
        src=spec.src,
        dst=spec.dst,
        protocol=spec.protocol,
        streams=spec.streams,
        auth=spec.auth,  # type: ignore[arg-type]
        client=spec.client,
        checksum=spec.checksum,
        scope=spec.scope,
        hosts=spec.hosts,
        file_size=file_size,
        rtt_ms=rtt_ms,
        started=clock.wall(now),
        finished=clock.wall(now),
        transfers=records,
    )

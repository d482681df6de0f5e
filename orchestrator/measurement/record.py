"""A measurement's record: K transfers' outcomes and the paper's throughput figures.

Throughput follows the paper: K_ok * S * 8 / mean(duration of the successful transfers),
in Gbit/s (1e9). Makespan throughput: K_ok * S * 8 / (last end - first start) over the
successful transfers. Failed transfers count in `failed`, never in the throughput.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from orchestrator.transfers import DEFAULT_CHECKSUM, DEFAULT_CLIENT
from orchestrator.transfers.base import Auth
from orchestrator.transfers.record import TransferRecord, iso


def throughput_gbps(file_size: int, durations: Sequence[float]) -> float:
    """The paper's figure: K * S * 8 / mean(duration), Gbit/s; 0.0 when nothing succeeded."""
    if not durations:
        return 0.0
    mean = statistics.fmean(durations)
    return len(durations) * file_size * 8 / mean / 1e9 if mean > 0 else 0.0


def makespan_gbps(file_size: int, spans: Sequence[tuple[float, float]]) -> float:
    """K * S * 8 / (last end - first start) over (start, end) spans, Gbit/s."""
    if not spans:
        return 0.0
    window = max(end for _, end in spans) - min(start for start, _ in spans)
    return len(spans) * file_size * 8 / window / 1e9 if window > 0 else 0.0


@dataclass
class MeasurementRecord:
    """A measurement in the shape `tpcbench measure --json` prints and the webapp ingests."""

    uuid: str
    campaign: str | None
    src: str
    dst: str
    protocol: str
    streams: int
    file_size: int
    rtt_ms: float | None
    started: datetime
    finished: datetime
    transfers: list[TransferRecord]
    cleanup_errors: list[str] = field(default_factory=list)
    auth: Auth = "x509"
    client: str = DEFAULT_CLIENT  # who drove the copies: native or gfal2
    checksum: str = DEFAULT_CHECKSUM  # adler32: each copy ended with the checksum step
    scope: str = "host"  # site: src and dst are two sites' fronts (MeasurementSpec.scope)
    hosts: int | None = None  # a point of the site scaling sweep: the host pairs used
    src_site: str | None = None  # the sites of the two ends; None: no sites here
    dst_site: str | None = None

    @property
    def successful(self) -> list[TransferRecord]:
        return [t for t in self.transfers if t.succeeded]

    @property
    def succeeded(self) -> int:
        return len(self.successful)

    @property
    def failed(self) -> int:
        return len(self.transfers) - self.succeeded

    @property
    def throughput_gbps(self) -> float:
        return throughput_gbps(self.file_size, [t.duration for t in self.successful])

    @property
    def makespan_gbps(self) -> float:
        return makespan_gbps(self.file_size, [(t.start, t.end) for t in self.successful])

    def to_json(self) -> dict[str, Any]:
        measured = self._json()
        if self.src_site is not None or self.dst_site is not None:
            measured |= {"src_site": self.src_site, "dst_site": self.dst_site}
        if self.scope != "host":  # a host measurement's JSON is as it was before sites
            measured |= {"scope": self.scope, "hosts": self.hosts}
        return measured

    def _json(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "campaign": self.campaign,
            "src": self.src,
            "dst": self.dst,
            "protocol": self.protocol,
            "auth": self.auth,
            "client": self.client,
            "checksum": self.checksum,
            "streams": self.streams,
            "file_size": self.file_size,
            "rtt_ms": self.rtt_ms,
            "started": iso(self.started),
            "finished": iso(self.finished),
            # No successful transfer means no throughput (null), not a measured 0 Gbit/s.
            "throughput_gbps": round(self.throughput_gbps, 6) if self.succeeded else None,
            "makespan_gbps": round(self.makespan_gbps, 6) if self.succeeded else None,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "transfers": [t.to_json() for t in self.transfers],
            "cleanup_errors": self.cleanup_errors,
        }

"""The two sweeps on one node, between two server instances A and B on that node:

- concurrency (Figure 3): for 1..max concurrent copies, `cp`, HTTPS-TPC and GridFTP-TPC, one
  after another at each level (interleaved, so slow drifts of the machine hit all alike);
- filesize (Figure 4): HTTPS-TPC at 1..max concurrent copies, for each file size.

Each point is summed up as a measurement is (the paper's K*S*8/mean duration, and the
makespan figure). A run becomes one result, POSTed to /api/v1/prelim-runs/.
"""

from __future__ import annotations

import asyncio
import uuid as uuidlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.prelim.copies import copy_concurrently
from orchestrator.servers.source_file import ensure_source_file
from orchestrator.transfers.record import iso

METHODS = ("cp", "https", "gridftp")
Progress = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ServerPair:
    """Two server instances on one node, A (source) and B (destination), with the paths of
    their data directories as this process sees them (for `cp` and the source file)."""

    a: Endpoint
    b: Endpoint
    a_data: Path
    b_data: Path
    creds: ClientCredentials
    node: str


@dataclass
class PrelimRun:
    kind: str  # "concurrency" | "filesize"
    node: str
    streams: int
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    started: str = field(default_factory=lambda: iso(datetime.now(UTC)))
    finished: str | None = None
    points: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "kind": self.kind,
            "node": self.node,
            "started": self.started,
            "finished": self.finished,
            "streams": self.streams,
            "points": self.points,
        }


async def measure_point(
    pair: ServerPair, method: str, file_size: int, copies: int, streams: int, timeout: float
) -> dict[str, Any]:
    """One point: `copies` concurrent copies of the file of `file_size` from A to B."""
    if method == "cp":
        source, _ = ensure_source_file(pair.a_data, file_size)
        summary = await copy_concurrently(source, pair.b_data, copies)
    else:
        request = MeasurementRequest.between(
            pair.a, pair.b, method, streams, transfers=copies, file_size=file_size
        )
        record = await run_measurement(
            request, creds=pair.creds, timeout=timeout, measure_latency=False
        )
        # a copy left behind fills the memory the guard counted on: said like a failure
        failures = [t.message for t in record.transfers if t.outcome != "success"]
        failures += [f"not cleaned up: {e}" for e in record.cleanup_errors]
        summary = {
            "throughput_gbps": round(record.throughput_gbps, 6) if record.succeeded else None,
            "makespan_gbps": round(record.makespan_gbps, 6) if record.succeeded else None,
            "succeeded": record.succeeded,
            "failed": record.failed,
            "error": failures[0] if failures else "",
        }
    return {"method": method, "file_size": file_size, "concurrency": copies, **summary}


def concurrency_sweep(
    pair: ServerPair,
    *,
    file_size: int,
    max_concurrency: int,
    methods: Sequence[str] = METHODS,
    streams: int = 1,
    timeout: float = 600.0,
    progress: Progress | None = None,
) -> PrelimRun:
    run = PrelimRun("concurrency", pair.node, streams)
    ensure_source_file(pair.a_data, file_size)
    for copies in range(1, max_concurrency + 1):
        for method in methods:
            point = asyncio.run(measure_point(pair, method, file_size, copies, streams, timeout))
            run.points.append(point)
            if progress is not None:
                progress(point)
    run.finished = iso(datetime.now(UTC))
    return run


def filesize_sweep(
    pair: ServerPair,
    *,
    sizes: Sequence[int],
    max_concurrency: int,
    streams: int = 1,
    timeout: float = 600.0,
    progress: Progress | None = None,
) -> PrelimRun:
    run = PrelimRun("filesize", pair.node, streams)
    for size in sizes:
        source, _ = ensure_source_file(pair.a_data, size)
        try:
            for copies in range(1, max_concurrency + 1):
                point = asyncio.run(measure_point(pair, "https", size, copies, streams, timeout))
                run.points.append(point)
                if progress is not None:
                    progress(point)
        finally:
            source.unlink(missing_ok=True)  # one size at a time in memory
    run.finished = iso(datetime.now(UTC))
    return run

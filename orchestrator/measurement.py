"""One measurement: K concurrent TPC transfers of one file from a source to a destination.

Throughput follows the paper: K_ok * S * 8 / mean(duration of the successful transfers),
in Gbit/s (1e9). Makespan throughput: K_ok * S * 8 / (last end - first start) over the
successful transfers. Failed transfers count in `failed`, never in the throughput.
"""

from __future__ import annotations

import asyncio
import statistics
import uuid as uuid_module
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint, in_token_area, source_name
from orchestrator.latency import measure_rtt
from orchestrator.transfers import DEFAULT_TIMEOUT, TRANSFER_TOOLS, ProgressCallback, TransferTool
from orchestrator.transfers.base import AUTH_MODES, Auth
from orchestrator.transfers.https import delete_https
from orchestrator.transfers.record import Clock, TransferRecord, iso

DEFAULT_TRANSFERS = 11
DEFAULT_FILE_SIZE = 2**30


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
        return {
            "uuid": self.uuid,
            "campaign": self.campaign,
            "src": self.src,
            "dst": self.dst,
            "protocol": self.protocol,
            "auth": self.auth,
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


def destination_name(measurement_uuid: str, index: int, protocol: str, auth: Auth = "x509") -> str:
    """Where transfer `index` writes: its own file.

    XRootD's files (https, root) are unique per measurement and deleted afterwards. GridFTP
    writes one file per transfer slot, overwritten by the next measurement: on a cluster its
    server's memory-backed directory is its own (XRootD cannot delete there) and
    globus-url-copy cannot delete, so the slots bound what stays (K files, as the paper's
    testDestinationFile1..K). Where the two servers share a directory (the lab), the
    deletion through XRootD removes them too.
    """
    if protocol == "gridftp":
        return f"/tpcbench-gridftp-{index}"
    name = f"/tpcbench-{measurement_uuid}-{index}"
    return in_token_area(name) if auth == "token" else name


async def run_measurement(
    src: Endpoint,
    dst: Endpoint,
    protocol: str,
    streams: int,
    transfers: int = DEFAULT_TRANSFERS,
    file_size: int = DEFAULT_FILE_SIZE,
    *,
    creds: ClientCredentials,
    timeout: float = DEFAULT_TIMEOUT,
    campaign: str | None = None,
    tool: TransferTool | None = None,
    source_path: str | None = None,
    keep_files: bool = False,
    measure_latency: bool = True,
    on_progress: ProgressCallback | None = None,
    auth: Auth = "x509",
) -> MeasurementRecord:
    """Start `transfers` copies at once, wait for all, clean up, return the record.

    Never raises for failed transfers: they are in the record with their error class.
    The destination files are removed afterwards through the destination's HTTPS side
    (see `destination_name` for GridFTP's), unless `keep_files`. With `auth="token"` the
    files are read from and written to the token area (endpoints.TOKEN_AREA), each transfer
    with tokens of its own.
    """
    if protocol not in TRANSFER_TOOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {sorted(TRANSFER_TOOLS)}")
    if streams < 1 or transfers < 1 or file_size < 1:
        raise ValueError("streams, transfers and file_size must be positive")
    tool = tool or TRANSFER_TOOLS[protocol]()
    if auth not in AUTH_MODES:
        raise ValueError(f"unknown auth {auth!r}; choose one of {', '.join(AUTH_MODES)}")
    if auth not in tool.auths:
        raise ValueError(f"{tool.name} transfers cannot use {auth} authorization here")
    measurement_uuid = str(uuid_module.uuid4())
    default_source = source_name(file_size)
    src_path = source_path or (in_token_area(default_source) if auth == "token" else default_source)
    rtt_ms = None
    if measure_latency:
        # Before the transfers, so the probe neither disturbs nor is disturbed by them.
        rtt_ms = await measure_rtt(src, dst, dst.ports[protocol])
    clock = Clock()
    started = clock.now()

    async def transfer(index: int) -> TransferRecord:
        record = await tool.run(
            src,
            dst,
            src_path,
            destination_name(measurement_uuid, index, protocol, auth),
            streams,
            creds,
            timeout,
            index=index,
            size=file_size,
            clock=clock,
            on_progress=on_progress,
            auth=auth,
        )
        if on_progress is not None:
            on_progress(index, record.bytes)  # the final count, also for tools without markers
        return record

    records = await asyncio.gather(*(transfer(index) for index in range(transfers)))
    finished = clock.now()
    record = MeasurementRecord(
        uuid=measurement_uuid,
        campaign=campaign,
        src=src.name,
        dst=dst.name,
        protocol=protocol,
        streams=streams,
        file_size=file_size,
        rtt_ms=rtt_ms,
        started=clock.wall(started),
        finished=clock.wall(finished),
        transfers=list(records),
        auth=auth,
    )
    if not keep_files:
        record.cleanup_errors = await remove_destination_files(record, dst, creds)
    return record


async def remove_destination_files(
    record: MeasurementRecord, dst: Endpoint, creds: ClientCredentials
) -> list[str]:
    """Delete every destination file of `record` (tmpfs must not fill); returns the errors.

    Failed transfers too: a pull refused by the source leaves an empty destination file.
    """
    results = await asyncio.gather(
        *(
            delete_https(
                dst,
                destination_name(record.uuid, t.index, record.protocol, record.auth),
                creds,
                record.auth,
            )
            for t in record.transfers
        )
    )
    return [r for r in results if r is not None]

"""Taking one measurement: K concurrent TPC transfers of one file from a source to a
destination, each to a file of its own, removed afterwards; the result is a
`MeasurementRecord` (record.py). What to measure is a `MeasurementRequest` (spec.py).
"""

from __future__ import annotations

import asyncio
import uuid as uuid_module

from orchestrator.endpoints import ClientCredentials, Endpoint, reported_site
from orchestrator.latency import measure_rtt
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.transfers import (
    DEFAULT_CLIENT,
    DEFAULT_TIMEOUT,
    ProgressCallback,
    TransferTool,
    client_of,
    combination_refusal,
    transfer_tool,
)
from orchestrator.transfers.https import delete_https
from orchestrator.transfers.record import Clock, TransferRecord


def tool_for(request: MeasurementRequest, tool: TransferTool | None = None) -> TransferTool:
    """The tool that takes `request`: `tool` when given (its own client is recorded), else
    the registry's for the spec's protocol and client. Raises ValueError when it cannot."""
    spec = request.spec
    if tool is None:
        tool = transfer_tool(spec.protocol, spec.client)
    elif spec.client not in (DEFAULT_CLIENT, client_of(tool)):
        raise ValueError(f"client={spec.client!r} but the tool given is a {client_of(tool)} client")
    refusal = combination_refusal(tool, spec.auth, spec.checksum)
    if refusal is not None:
        raise ValueError(refusal)
    return tool


async def run_measurement(
    request: MeasurementRequest,
    *,
    creds: ClientCredentials,
    timeout: float = DEFAULT_TIMEOUT,
    campaign: str | None = None,
    tool: TransferTool | None = None,
    keep_files: bool = False,
    measure_latency: bool = True,
    on_progress: ProgressCallback | None = None,
) -> MeasurementRecord:
    """Start the request's copies at once, wait for all, clean up, return the record.

    Never raises for failed transfers: they are in the record with their error class.
    The destination files are removed afterwards through the destination's HTTPS side
    (see `destination_name` for GridFTP's), unless `keep_files`. With `auth="token"` the
    files are read from and written to the token area (endpoints.TOKEN_AREA), each
    transfer with tokens of its own. Raises ValueError for what no tool can take.
    """
    tool = tool_for(request, tool)
    spec, src, dst = request.spec, request.src, request.dst
    measurement_uuid = str(uuid_module.uuid4())
    rtt_ms = None
    if measure_latency:
        # Before the transfers, so the probe neither disturbs nor is disturbed by them.
        rtt_ms = await measure_rtt(src, dst, dst.ports[spec.protocol])
    clock = Clock()
    started = clock.now()

    async def transfer(index: int) -> TransferRecord:
        copy = request.transfer_request(
            measurement_uuid, index, creds, timeout=timeout, clock=clock, on_progress=on_progress
        )
        record = await tool.copy(copy)
        if on_progress is not None:
            on_progress(index, record.bytes)  # the final count, also for tools without markers
        return record

    records = await asyncio.gather(*(transfer(index) for index in range(request.transfers)))
    if spec.scope == "site":
        for record in records:
            name_direct_servers(record, request)
    finished = clock.now()
    record = MeasurementRecord(
        uuid=measurement_uuid,
        campaign=campaign,
        src=src.name,
        dst=dst.name,
        protocol=spec.protocol,
        streams=spec.streams,
        file_size=request.file_size,
        rtt_ms=rtt_ms,
        started=clock.wall(started),
        finished=clock.wall(finished),
        transfers=list(records),
        auth=spec.auth,
        client=client_of(tool),
        checksum=spec.checksum,
        scope=spec.scope,
        hosts=spec.hosts,
        src_site=reported_site(src.site),
        dst_site=reported_site(dst.site),
    )
    if not keep_files:
        record.cleanup_errors = await remove_destination_files(record, dst, creds, request)
    return record


def name_direct_servers(record: TransferRecord, request: MeasurementRequest) -> None:
    """A site measurement's copy names the data server of each end: learned through a
    redirector by the tool, or, where the copy was addressed to a host (the GridFTP front's
    round robin, the scaling sweep), that host ("address:port", as the tools name them)."""
    src, dst = request.lane(record.index)
    port = request.spec.protocol
    if record.source_server is None and not src.redirector:
        record.source_server = f"{src.address}:{src.ports[port]}"
    if record.destination_server is None and not dst.redirector:
        record.destination_server = f"{dst.address}:{dst.ports[port]}"


async def remove_destination_files(
    record: MeasurementRecord,
    dst: Endpoint,
    creds: ClientCredentials,
    request: MeasurementRequest | None = None,
) -> list[str]:
    """Delete every destination file of `record` (tmpfs must not fill) at `dst`, or where the
    `request`'s copy wrote it (its lane's destination: a site's front sends the delete on to
    the data server that has the file); returns the errors.

    Failed transfers too: a pull refused by the source leaves an empty destination file.
    """
    results = await asyncio.gather(
        *(
            delete_https(
                request.lane(t.index)[1] if request is not None else dst,
                destination_name(record.uuid, t.index, record.protocol, record.auth),
                creds,
                record.auth,
            )
            for t in record.transfers
        )
    )
    return [r for r in results if r is not None]

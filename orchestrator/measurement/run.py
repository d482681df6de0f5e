"""Taking one measurement: K concurrent TPC transfers of one file from a source to a
destination, each to a file of its own, removed afterwards; the result is a
`MeasurementRecord` (record.py)."""

from __future__ import annotations

import asyncio
import uuid as uuid_module

from orchestrator.endpoints import ClientCredentials, Endpoint, in_token_area, source_name
from orchestrator.latency import measure_rtt
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.transfers import (
    CLIENTS,
    DEFAULT_CLIENT,
    DEFAULT_TIMEOUT,
    TRANSFER_TOOLS,
    ProgressCallback,
    TransferTool,
    client_of,
    transfer_tool,
)
from orchestrator.transfers.base import AUTH_MODES, Auth
from orchestrator.transfers.https import delete_https
from orchestrator.transfers.record import Clock, TransferRecord

DEFAULT_TRANSFERS = 11
DEFAULT_FILE_SIZE = 2**30


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
    client: str = DEFAULT_CLIENT,
    source_path: str | None = None,
    keep_files: bool = False,
    measure_latency: bool = True,
    on_progress: ProgressCallback | None = None,
    auth: Auth = "x509",
) -> MeasurementRecord:
    """Start `transfers` copies at once, wait for all, clean up, return the record.

    Never raises for failed transfers: they are in the record with their error class.
    The destination files are removed afterwards through the destination's HTTPS side
    (see `destination_name` for GridFTP's), unless `keep_files`. `client` (native or
    gfal2) picks the tool when `tool` is not given; a given tool's own client is recorded.
    With `auth="token"` the files are read from and written to the token area
    (endpoints.TOKEN_AREA), each transfer with tokens of its own.
    """
    if protocol not in TRANSFER_TOOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {sorted(TRANSFER_TOOLS)}")
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; choose one of {list(CLIENTS)}")
    if streams < 1 or transfers < 1 or file_size < 1:
        raise ValueError("streams, transfers and file_size must be positive")
    if tool is None:
        tool = transfer_tool(protocol, client)
    elif client not in (DEFAULT_CLIENT, client_of(tool)):
        raise ValueError(f"client={client!r} but the tool given is a {client_of(tool)} client")
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
        client=client_of(tool),
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

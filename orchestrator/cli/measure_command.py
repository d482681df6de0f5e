"""`tpcbench measure`: one measurement between two nodes, with live progress, then a table."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from orchestrator.endpoints import DEFAULT_PORTS, ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import DEFAULT_FILE_SIZE, DEFAULT_TRANSFERS, MeasurementRequest
from orchestrator.sizes import format_size, parse_size
from orchestrator.transfers import (
    CHECKSUMS,
    CLIENTS,
    DEFAULT_CHECKSUM,
    DEFAULT_CLIENT,
    DEFAULT_TIMEOUT,
    TRANSFER_TOOLS,
    combination_refusal,
    transfer_tool,
)
from orchestrator.transfers.base import AUTH_MODES

MAX_STREAMS = 100  # XRootD refuses more than 100 HTTP-TPC streams


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "measure",
        help="run one measurement (K concurrent TPC transfers) between two nodes",
        description="K concurrent third-party copies of one file from SRC to DST. Nodes are "
        "lab node names, or host names/addresses with --cert/--key/--certdir.",
    )
    parser.add_argument("--src", required=True, help="source node (lab name or address)")
    parser.add_argument("--dst", required=True, help="destination node (lab name or address)")
    parser.add_argument("--protocol", required=True, choices=sorted(TRANSFER_TOOLS))
    parser.add_argument("--streams", type=int, default=1, help="TCP streams per transfer")
    parser.add_argument("--transfers", type=int, default=DEFAULT_TRANSFERS, help="K (default 11)")
    parser.add_argument(
        "--file-size", help="bytes per transfer, e.g. 1GiB (default: the lab's file size)"
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="s per transfer")
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        default=DEFAULT_CLIENT,
        help="who drives the copies: our own tools (native) or gfal-copy (gfal2)",
    )
    parser.add_argument("--mode", choices=("pull", "push"), help="https only (default pull)")
    parser.add_argument(
        "--checksum",
        choices=CHECKSUMS,
        default=DEFAULT_CHECKSUM,
        help="adler32: end each transfer with the checksum step an FTS transfer does (the "
        "source's and destination's digests asked and compared; phase `checksum`); "
        "default none",
    )
    parser.add_argument(
        "--auth",
        choices=AUTH_MODES,
        default="x509",
        help="x509: the client certificate; token: tokens minted per transfer by the lab's "
        "issuer (https only)",
    )
    parser.add_argument("--json", action="store_true", help="print the full record as JSON")
    parser.add_argument("--keep-files", action="store_true", help="leave destination files")
    parser.add_argument("--inventory", type=Path, help="lab inventory (default: the running lab)")
    explicit = parser.add_argument_group("explicit endpoints (instead of the lab)")
    explicit.add_argument("--cert", type=Path, help="client certificate (PEM)")
    explicit.add_argument("--key", type=Path, help="client key (PEM, unencrypted)")
    explicit.add_argument("--certdir", type=Path, help="CA directory (<hash>.0 files)")
    explicit.add_argument("--data-root", default="/data", help="data root on both nodes")
    explicit.add_argument(
        "--ports",
        default=",".join(f"{k}={v}" for k, v in DEFAULT_PORTS.items()),
        help="service ports on both nodes, e.g. https=8443,root=1094,gridftp=2811",
    )
    explicit.add_argument("--src-dn", help="source host certificate DN (gridftp)")
    explicit.add_argument("--dst-dn", help="destination host certificate DN (gridftp)")
    parser.set_defaults(func=measure)


def measure(args: argparse.Namespace) -> int:
    if not 1 <= args.streams <= MAX_STREAMS:
        raise UserError(f"--streams must be between 1 and {MAX_STREAMS}")
    if args.transfers < 1:
        raise UserError("--transfers must be at least 1")
    if args.timeout <= 0:
        raise UserError("--timeout must be a positive number of seconds")
    if args.src == args.dst:
        raise UserError("--src and --dst must be different nodes")
    if args.mode is not None and args.protocol != "https":
        raise UserError(f"--mode is for https only; {args.protocol} TPC has no pull/push choice")
    try:
        tool = transfer_tool(args.protocol, args.client, mode=args.mode or "pull")
    except ValueError as exc:
        raise UserError(f"--protocol {args.protocol} --client {args.client}: {exc}") from None
    src, dst, creds, lab_file_size = resolve_endpoints(args)
    file_size = lab_file_size or DEFAULT_FILE_SIZE
    if args.file_size is not None:
        try:
            file_size = parse_size(args.file_size)
        except ValueError as exc:
            raise UserError(f"--file-size: {exc}") from None
    if args.auth not in tool.auths:
        raise UserError(
            f"--auth {args.auth} does not work with --protocol {args.protocol} "
            f"--client {args.client}; it takes: {', '.join(tool.auths)}"
        )
    refusal = combination_refusal(tool, args.auth, args.checksum)
    if refusal is not None:
        raise UserError(f"--checksum {args.checksum}: {refusal}")
    try:
        request = MeasurementRequest.between(
            src, dst, args.protocol, args.streams,
            auth=args.auth, client=args.client, checksum=args.checksum,
            transfers=args.transfers, file_size=file_size,
        )  # fmt: skip
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.auth == "token" and creds.tokens is None:
        raise UserError(
            "--auth token needs the lab's token issuer, and this lab has none; restart it: "
            "tpcbench lab down && tpcbench lab up"
        )
    logging.getLogger("httpx").setLevel(
        logging.WARNING
    )  # one line per request would garble the display
    console = Console(stderr=True)
    with LiveProgress(console, args.transfers, file_size) as live:
        record = asyncio.run(
            run_measurement(
                request,
                creds=creds,
                timeout=args.timeout,
                tool=tool,
                keep_files=args.keep_files,
                on_progress=live.update,
            )
        )
    if args.json:
        json.dump(record.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        Console().print(result_table(record))
        print(summary_line(record))
    return 0 if record.failed == 0 else 1


def resolve_endpoints(
    args: argparse.Namespace,
) -> tuple[Endpoint, Endpoint, ClientCredentials, int | None]:
    """Lab nodes by name, or explicit addresses when client credentials are given."""
    given = [p for p in (args.cert, args.key, args.certdir) if p is not None]
    if given:
        if len(given) != 3:
            raise UserError("explicit endpoints need all of --cert, --key and --certdir")
        for path in given:
            if not path.exists():
                raise UserError(f"{path} does not exist")
        ports = _parse_ports(args.ports)
        creds = ClientCredentials(cert=args.cert, key=args.key, certdir=args.certdir)
        src = Endpoint(args.src, args.src, dict(ports), args.data_root, host_dn=args.src_dn)
        dst = Endpoint(args.dst, args.dst, dict(ports), args.data_root, host_dn=args.dst_dn)
        return src, dst, creds, None
    from orchestrator.lab.inventory import load_inventory  # the lab is optional here

    try:
        inventory = load_inventory(args.inventory)
    except UserError as exc:
        raise UserError(f"{exc}; or name explicit endpoints with --cert/--key/--certdir") from None
    return (
        inventory.node(args.src),
        inventory.node(args.dst),
        inventory.client,
        inventory.file_size,
    )


def _parse_ports(text: str) -> dict[str, int]:
    ports = dict(DEFAULT_PORTS)
    for item in filter(None, text.split(",")):
        name, _, value = item.partition("=")
        if name not in DEFAULT_PORTS or not value.isdigit() or not 0 < int(value) < 65536:
            raise UserError(f"--ports: {item!r} is not like https=8443,root=1094,gridftp=2811")
        ports[name] = int(value)
    return ports


class LiveProgress:
    """A live bar per transfer (bytes from perf markers) on stderr, only on a terminal."""

    def __init__(self, console: Console, transfers: int, file_size: int) -> None:
        self.progress = Progress(
            TextColumn("transfer {task.fields[index]:>2}"),
            BarColumn(),
            DownloadColumn(binary_units=True),
            TransferSpeedColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
            refresh_per_second=4,  # the driving process must stay light
        )
        self.tasks = [
            self.progress.add_task("", total=file_size, index=i) for i in range(transfers)
        ]

    def __enter__(self) -> LiveProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.progress.stop()

    def update(self, index: int, moved: int) -> None:
        self.progress.update(self.tasks[index], completed=moved)


def summary_line(record: MeasurementRecord) -> str:
    rtt = f"{record.rtt_ms:.3f} ms" if record.rtt_ms is not None else "n/a"
    line = (
        f"throughput {record.throughput_gbps:.3f} Gbit/s (K*S*8/mean duration), "
        f"makespan {record.makespan_gbps:.3f} Gbit/s, {record.succeeded} ok / "
        f"{record.failed} failed, RTT {rtt}"
    )
    steps = [(t.phases["checksum"], t.duration) for t in record.transfers if "checksum" in t.phases]
    if steps:
        seconds = statistics.median(s for s, _ in steps)
        share = statistics.median(s / d for s, d in steps if d > 0)
        line += f"; checksum step ({record.checksum}) median {seconds:.3f} s, {share:.0%} of a copy"
    return line


def result_table(record: MeasurementRecord) -> Table:
    table = Table(
        title=f"{record.protocol} ({record.auth}, {record.client}"
        + (f", checksum {record.checksum}" if record.checksum != "none" else "")
        + f") {record.src} -> {record.dst}, "
        f"{record.streams} stream(s), "
        f"{len(record.transfers)} x {format_size(record.file_size)}",
    )
    for column in ("#", "outcome", "error", "seconds", "bytes", "Gbit/s", "message"):
        table.add_column(column, overflow="fold")
    for t in record.transfers:
        rate = t.bytes * 8 / t.duration / 1e9 if t.succeeded and t.duration > 0 else 0.0
        table.add_row(
            str(t.index),
            t.outcome,
            t.error_class or "",
            f"{t.duration:.3f}",
            str(t.bytes),
            f"{rate:.3f}" if t.succeeded else "",
            t.message[:200],
        )
    return table

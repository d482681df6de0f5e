"""`tpcbench prelim concurrency|filesize`: what one node's servers can do (the paper's
Figures 3 and 4), with progress while it runs, a table at the end, JSON on request, and the
result sent to the webapp through the spool with --report-to."""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from orchestrator.campaign.context import build_reporter
from orchestrator.campaign.settings import load_settings
from orchestrator.endpoints import ClientCredentials
from orchestrator.errors import UserError
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.inventory import inventory_path, lab_dir, load_inventory
from orchestrator.lab.lifecycle import run_record_path
from orchestrator.lab.run_record import LabRun
from orchestrator.prelim.memory import check_fits, memory_budget
from orchestrator.prelim.pair import attached_pair, lab_pair
from orchestrator.prelim.sweeps import (
    METHODS,
    PrelimRun,
    ServerPair,
    concurrency_sweep,
    filesize_sweep,
)
from orchestrator.servers import layout
from orchestrator.sizes import format_size, size_argument

MAX_CONCURRENCY = 100


def _sizes(text: str) -> list[int]:
    return [size_argument(part) for part in text.split(",") if part.strip()]


def _methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown or not methods:
        raise argparse.ArgumentTypeError(f"methods are {', '.join(METHODS)}; not {unknown}")
    return methods


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", help="the lab node to run on (default: the first)")
    parser.add_argument("--max", type=int, default=12, help="highest concurrency (default 12)")
    parser.add_argument("--streams", type=int, default=1, help="streams per TPC copy (1)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per copy")
    parser.add_argument(
        "--memory-limit",
        type=size_argument,
        default=None,
        help="never fill more than this, e.g. 119GiB",
    )
    parser.add_argument("--json", action="store_true", help='print {"points": [...]} as JSON')
    parser.add_argument("--report-to", default=None, help="webapp URL to send the run to")
    parser.add_argument("--token-file", default=None, help="API token file (or TPCBENCH_API_TOKEN)")
    parser.add_argument("--inventory", type=Path, help="lab inventory (default: the running lab)")
    attach = parser.add_argument_group(
        "servers already running (the chart's prelim Job): A and B at ADDRESS on the prelim "
        "ports, data in /data/a and /data/b"
    )
    attach.add_argument("--attach", metavar="ADDRESS", help="the node's address")
    attach.add_argument("--client-cert", type=Path, default=layout.HOST_CERT)
    attach.add_argument("--client-key", type=Path, default=layout.HOST_KEY)
    attach.add_argument("--certdir", type=Path, default=layout.CERTDIR)
    attach.add_argument("--host-dn", default=None, help="the servers' certificate DN (GridFTP)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prelim",
        help="preliminary benchmarks on one node: concurrency and file size sweeps",
        description="Copies between two memory-backed directories on one node, through two "
        "XRootD and two GridFTP instances started there for the run (the paper's Section 2).",
    )
    actions = parser.add_subparsers(dest="prelim_action", metavar="ACTION")
    actions.required = True
    concurrency = actions.add_parser(
        "concurrency",
        help="cp, HTTPS-TPC and GridFTP-TPC at 1..max concurrent copies (Figure 3)",
    )
    _common(concurrency)
    concurrency.add_argument(
        "--file-size", type=size_argument, default=1 << 30, help="default 1GiB"
    )
    concurrency.add_argument(
        "--methods", type=_methods, default=list(METHODS), help="default cp,https,gridftp"
    )
    concurrency.set_defaults(func=run_concurrency)
    filesize = actions.add_parser(
        "filesize", help="HTTPS-TPC at 1..max concurrent copies for each file size (Figure 4)"
    )
    _common(filesize)
    filesize.add_argument(
        "--sizes",
        type=_sizes,
        default=_sizes("1GiB,2GiB,5GiB,10GiB"),
        help="comma-separated",
    )
    filesize.set_defaults(func=run_filesize)


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.max <= MAX_CONCURRENCY:
        raise UserError(f"--max must be between 1 and {MAX_CONCURRENCY}")
    if not 1 <= args.streams <= 100:
        raise UserError("--streams must be between 1 and 100")


@contextmanager
def server_pair(args: argparse.Namespace, largest: int) -> Iterator[ServerPair]:
    """The pair to copy between, after the memory guard has seen the largest file."""
    if args.attach:
        check_fits(largest, args.max, memory_budget(layout.DATA_ROOT, args.memory_limit))
        creds = ClientCredentials(args.client_cert, args.client_key, args.certdir)
        node = socket.gethostname()
        yield attached_pair(node, args.attach, creds, args.host_dn)
        return
    path = args.inventory or inventory_path()
    inventory = load_inventory(path)
    node = args.node or inventory.nodes[0].name
    inventory.node(node)  # a one-line error naming the lab's nodes
    home = lab_dir_home(path)
    parent = lab_data_dir(LabRun.load(run_record_path(home)).network.prefix)
    check_fits(largest, args.max, memory_budget(parent, args.memory_limit))
    with lab_pair(home, inventory, node) as pair:
        yield pair


def lab_dir_home(inventory_file: Path) -> Path:
    """$TPCBENCH_HOME of the lab whose inventory this is (<home>/lab/inventory.json)."""
    home = inventory_file.parent.parent
    if lab_dir(home) != inventory_file.parent:
        raise UserError(f"{inventory_file} is not in a lab's state directory")
    return home


def _progress(total: int, console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]prelim[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=2,
    )


def _run(args: argparse.Namespace, total: int, largest: int, sweep: Any) -> int:
    _check(args)
    console = Console(stderr=True)
    with server_pair(args, largest) as pair, _progress(total, console) as bar:
        task = bar.add_task("starting", total=total)

        def progress(point: dict[str, Any]) -> None:
            rate = point["throughput_gbps"]
            shown = "failed" if rate is None else f"{rate:.2f} Gbit/s"
            bar.update(
                task,
                advance=1,
                description=f"{point['method']} x{point['concurrency']} "
                f"{format_size(point['file_size'])}: {shown}",
            )

        run = sweep(pair, progress)
    _report(args, run, console)
    if args.json:
        print(json.dumps({"points": run.points, **_without_points(run)}, indent=2))
    else:
        Console().print(points_table(run))
    return 0 if all(p["failed"] == 0 for p in run.points) else 1


def _without_points(run: PrelimRun) -> dict[str, Any]:
    return {k: v for k, v in run.to_json().items() if k != "points"}


def _report(args: argparse.Namespace, run: PrelimRun, console: Console) -> None:
    flags = {"report_to": args.report_to, "token_file": args.token_file}
    settings = load_settings({k: v for k, v in flags.items() if v is not None})
    if not settings.report_to:
        return
    reporter = build_reporter(settings)
    outcome = reporter.report_result("prelim", run.to_json())
    reporter.close(flush_timeout=10.0)
    console.print(f"prelim run {run.uuid}: {outcome} ({settings.report_to})")


def points_table(run: PrelimRun) -> Table:
    """Rows: concurrency; columns: method (concurrency runs) or file size (filesize runs)."""

    def column(p: dict[str, Any]) -> str:
        return p["method"] if run.kind == "concurrency" else format_size(p["file_size"])

    columns = list(dict.fromkeys(column(p) for p in run.points))
    table = Table(title=f"prelim {run.kind} on {run.node}: aggregate Gbit/s (K*S*8/mean)")
    table.add_column("copies", justify="right")
    for name in columns:
        table.add_column(name, justify="right")
    for copies in sorted({p["concurrency"] for p in run.points}):
        row = {column(p): p for p in run.points if p["concurrency"] == copies}
        cells = []
        for name in columns:
            point = row.get(name)
            rate = point and point["throughput_gbps"]
            cells.append("-" if point is None else "failed" if rate is None else f"{rate:.2f}")
        table.add_row(str(copies), *cells)
    return table


def run_concurrency(args: argparse.Namespace) -> int:
    def sweep(pair: ServerPair, progress: Any) -> PrelimRun:
        return concurrency_sweep(
            pair, file_size=args.file_size, max_concurrency=args.max, methods=args.methods,
            streams=args.streams, timeout=args.timeout, progress=progress,
        )  # fmt: skip

    return _run(args, args.max * len(args.methods), args.file_size, sweep)


def run_filesize(args: argparse.Namespace) -> int:
    if not args.sizes:
        raise UserError("--sizes needs at least one size, e.g. 1GiB,2GiB")

    def sweep(pair: ServerPair, progress: Any) -> PrelimRun:
        return filesize_sweep(
            pair, sizes=args.sizes, max_concurrency=args.max, streams=args.streams,
            timeout=args.timeout, progress=progress,
        )  # fmt: skip

    return _run(args, args.max * len(args.sizes), max(args.sizes), sweep)

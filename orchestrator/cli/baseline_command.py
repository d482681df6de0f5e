"""`tpcbench baseline --src A --dst B`: what the link between two nodes carries (iperf3, as many
streams as a measurement, slow start left out), printed, and sent to the webapp through the
spool with --report-to. The nodes come from the same discovery as `tpcbench campaign plan`:
the lab's inventory by default, the server pods with `--discovery kubernetes`."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from orchestrator.campaign.context import build_context, build_reporter
from orchestrator.campaign.settings import load_settings
from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.prelim.baseline import (
    DEFAULT_OMIT,
    DEFAULT_SECONDS,
    DEFAULT_STREAMS,
    MAX_STREAMS,
    Baseline,
    check_baseline_options,
    check_baseline_possible,
    measure_baseline,
)

SETTINGS_FLAGS = ("discovery", "inventory", "namespace", "report_to", "token_file")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "baseline",
        help=f"what the link between two nodes carries: iperf3, {DEFAULT_STREAMS} streams "
        "(the reference line)",
        description="iperf3 from SRC to DST over the path the transfers take: in the lab "
        "inside the nodes' network namespaces, on Kubernetes from the source's server pod to "
        "the destination's iperf3 server. As many streams as a measurement (11 transfers x 8 "
        "streams), the first seconds (slow start) left out. `tpcbench campaign run "
        "--baseline` takes one per pair.",
    )
    parser.add_argument("--src", required=True, help="source node")
    parser.add_argument("--dst", required=True, help="destination node")
    parser.add_argument(
        "--streams",
        type=int,
        default=DEFAULT_STREAMS,
        help=f"parallel TCP streams, 1-{MAX_STREAMS} (default {DEFAULT_STREAMS}: "
        "11 transfers x 8 streams)",
    )
    parser.add_argument(
        "--seconds", type=int, default=DEFAULT_SECONDS, help="seconds measured (default 10)"
    )
    parser.add_argument(
        "--omit",
        type=int,
        default=DEFAULT_OMIT,
        help=f"seconds of slow start before them, left out (default {DEFAULT_OMIT})",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--report-to", default=None, help="webapp URL to send the result to")
    parser.add_argument("--token-file", default=None, help="API token file (or TPCBENCH_API_TOKEN)")
    parser.add_argument(
        "--discovery", default=None, help="where the nodes come from: lab or kubernetes"
    )
    parser.add_argument(
        "--inventory", default=None, help="lab inventory (default: the running lab)"
    )
    parser.add_argument("--namespace", default=None, help="kubernetes namespace of the server pods")
    parser.set_defaults(func=baseline)


def find_nodes(nodes: list[Endpoint], *names: str) -> list[Endpoint]:
    by_name = {node.name: node for node in nodes}
    missing = [name for name in names if name not in by_name]
    if missing:
        found = ", ".join(sorted(by_name)) or "none"
        raise UserError(f"no ready node {', '.join(missing)}; discovery found: {found}")
    return [by_name[name] for name in names]


def describe(result: Baseline) -> str:
    """One line: the figure and how it was taken."""
    how = f"{result.tool}, {result.streams} streams, {result.duration_s} s"
    if result.omit_s:
        how += f" after {result.omit_s} s of slow start"
    if result.retransmits is not None:
        how += f", {result.retransmits} retransmits"
    return f"{result.src} -> {result.dst}: {result.throughput_gbps:.3f} Gbit/s ({how})"


def baseline(args: argparse.Namespace) -> int:
    if args.src == args.dst:
        raise UserError("--src and --dst must be different nodes")
    check_baseline_options(args.streams, args.seconds, args.omit)
    flags = {name: getattr(args, name) for name in SETTINGS_FLAGS}
    settings = load_settings({k: v for k, v in flags.items() if v is not None})
    context = build_context(settings, need_credentials=False)
    src, dst = find_nodes(context.discovery.discover(), args.src, args.dst)
    check_baseline_possible(src, dst)
    # a missing API token stops us before the test, not after it
    reporter = build_reporter(settings) if settings.report_to else None
    console = Console(stderr=True)
    with console.status(
        f"iperf3 {src.name} -> {dst.name}, {args.streams} streams, {args.omit} + {args.seconds} s"
    ):
        result = measure_baseline(
            src, dst, streams=args.streams, seconds=args.seconds, omit=args.omit
        )
    if reporter is not None:
        outcome = reporter.report_result("baseline", result.to_json())
        reporter.close(flush_timeout=10.0)
        console.print(f"baseline {result.uuid}: {outcome} ({settings.report_to})")
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    elif result.throughput_gbps is not None:
        print(describe(result))
    if result.error:
        console.print(f"[red]{result.error}[/red]")
        return 1
    return 0

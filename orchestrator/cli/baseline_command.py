"""`tpcbench baseline --src A --dst B`: what the link between two lab nodes carries (iperf3,
8 streams), printed, and sent to the webapp through the spool with --report-to."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from orchestrator.campaign.context import build_reporter
from orchestrator.campaign.settings import load_settings
from orchestrator.errors import UserError
from orchestrator.lab.inventory import load_inventory
from orchestrator.prelim.baseline import DEFAULT_SECONDS, DEFAULT_STREAMS, measure_baseline


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "baseline",
        help="what the link between two nodes carries: iperf3, 8 streams (the reference line)",
        description="iperf3 from SRC to DST inside the lab nodes' network namespaces, over the "
        "same path the transfers take. `tpcbench campaign run --baseline` takes one per pair.",
    )
    parser.add_argument("--src", required=True, help="source lab node")
    parser.add_argument("--dst", required=True, help="destination lab node")
    parser.add_argument("--streams", type=int, default=DEFAULT_STREAMS, help="default 8")
    parser.add_argument("--seconds", type=int, default=DEFAULT_SECONDS, help="default 10")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--report-to", default=None, help="webapp URL to send the result to")
    parser.add_argument("--token-file", default=None, help="API token file (or TPCBENCH_API_TOKEN)")
    parser.add_argument("--inventory", type=Path, help="lab inventory (default: the running lab)")
    parser.set_defaults(func=baseline)


def baseline(args: argparse.Namespace) -> int:
    if args.src == args.dst:
        raise UserError("--src and --dst must be different nodes")
    if not 1 <= args.streams <= 128 or not 1 <= args.seconds <= 3600:
        raise UserError("--streams must be 1-128 and --seconds 1-3600")
    inventory = load_inventory(args.inventory)
    src, dst = inventory.node(args.src), inventory.node(args.dst)
    console = Console(stderr=True)
    with console.status(
        f"iperf3 {src.name} -> {dst.name}, {args.streams} streams, {args.seconds} s"
    ):
        result = measure_baseline(src, dst, streams=args.streams, seconds=args.seconds)
    flags = {"report_to": args.report_to, "token_file": args.token_file}
    settings = load_settings({k: v for k, v in flags.items() if v is not None})
    if settings.report_to:
        reporter = build_reporter(settings)
        outcome = reporter.report_result("baseline", result.to_json())
        reporter.close(flush_timeout=10.0)
        console.print(f"baseline {result.uuid}: {outcome} ({settings.report_to})")
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    elif result.throughput_gbps is not None:
        print(f"{src.name} -> {dst.name}: {result.throughput_gbps:.3f} Gbit/s "
              f"(iperf3, {args.streams} streams, {args.seconds} s)")  # fmt: skip
    if result.error:
        console.print(f"[red]{result.error}[/red]")
        return 1
    return 0

"""`tpcbench campaign run`: one campaign now, with a progress bar and a summary table;
`tpcbench campaign plan`: which nodes a campaign would measure, without measuring."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from orchestrator.campaign.context import build_context, build_reporter, campaign_lock
from orchestrator.campaign.journal import recover_interrupted
from orchestrator.campaign.result import CampaignProgress, CampaignResult
from orchestrator.campaign.rotation import preview_fit
from orchestrator.campaign.run import Campaign
from orchestrator.campaign.site_scope import discover_fronts, plan_campaign_specs
from orchestrator.cli.campaign_options import (
    add_campaign_flags,
    add_cycle_fit_flag,
    settings_from_args,
)
from orchestrator.sizes import format_size


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("campaign", help="run a campaign: every pair, now")
    actions = parser.add_subparsers(dest="campaign_action", metavar="ACTION")
    actions.required = True
    run = actions.add_parser(
        "run",
        help="measure every ordered pair of nodes x protocols x stream settings",
        description="Discover the nodes, measure every ordered pair (never a node in two "
        "measurements at once), report each result to the webapp through the durable spool.",
    )
    add_campaign_flags(run)
    run.set_defaults(func=campaign_run)
    plan = actions.add_parser(
        "plan",
        help="list the nodes discovery finds and the measurements a campaign would take",
        description="Discover the nodes as a campaign would (same flags, same settings) and "
        "print them with the measurements planned; nothing is measured. Exits 1 when fewer "
        "than --min-nodes nodes are ready (the chart's `helm test` uses this).",
    )
    add_campaign_flags(plan)
    plan.add_argument("--min-nodes", type=int, default=2, help="fail below this (default 2)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument(
        "--schedule",
        default=None,
        help="cron expression whose cycle the estimate is held against (default the "
        "orchestrator's schedule setting, '0 0,12 * * *')",
    )
    add_cycle_fit_flag(plan)
    plan.set_defaults(func=campaign_plan)


def campaign_plan(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    context = build_context(settings, need_credentials=False)
    nodes = context.discovery.discover()
    campaign_settings = context.campaign_settings(settings)
    fronts = discover_fronts(context.discovery, nodes) if campaign_settings.scope == "site" else {}
    specs = plan_campaign_specs(campaign_settings, [n.name for n in nodes], fronts)
    for why in campaign_settings.unsupported():
        print(f"left out of the plan: {why}", file=sys.stderr)
    fit = preview_fit(
        specs,
        schedule=settings.schedule,
        slip=settings.slip,
        mode=settings.cycle_fit,
        max_parallel=settings.max_parallel_pairs,
        now=datetime.now(UTC),
        full_duplex=settings.full_duplex,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "nodes": [n.to_json() for n in nodes],
                    "measurements": [asdict(spec) for spec in specs],
                    # the next scheduled campaign: its estimate and what fits its cycle
                    "cycle_fit": {
                        "schedule": settings.schedule,
                        **fit.to_json(),
                        "measurements_this_cycle": len(fit.specs),
                    },
                },
                indent=2,
            )
        )
    else:
        table = Table(title=f"{len(nodes)} ready node(s), {len(specs)} measurement(s) planned")
        for column in ("node", "address", "ports", "site", "link Gbit/s"):
            table.add_column(column)
        for node in nodes:
            ports = ", ".join(f"{k} {v}" for k, v in sorted(node.ports.items()))
            link = "" if node.link_gbps is None else f"{node.link_gbps:g}"
            table.add_row(node.name, node.address, ports, node.site or "", link)
        Console().print(table)
        print(f"scheduled ({settings.schedule}): {fit.message}")
    if len(nodes) < args.min_nodes:
        print(
            f"tpcbench: only {len(nodes)} node(s) ready, fewer than {args.min_nodes}: check the "
            "server pods (both the xrootd and the gridftp pod of a node must be Ready)",
            file=sys.stderr,
        )
        return 1
    return 0


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM / first Ctrl-C: start no new measurement; a second Ctrl-C aborts."""
    previous = {}

    def handler(signum: int, frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def campaign_run(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    context = build_context(settings)
    reporter = build_reporter(settings)
    console = Console(stderr=True)
    stop = threading.Event()
    bar = Progress(
        TextColumn("[bold]campaign[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("measurements, {task.fields[pairs]} pairs"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        refresh_per_second=2,
    )
    task = bar.add_task("starting", total=None, pairs="0/?")
    pair_total: dict[tuple[str, str], int] = {}
    pair_done: dict[tuple[str, str], int] = {}
    campaign_settings = context.campaign_settings(settings, trigger="cli")
    per_pair = campaign_settings.per_pair

    def progress(update: CampaignProgress) -> None:
        last = update.last or {}
        pair = (last.get("src", ""), last.get("dst", ""))
        pair_done[pair] = pair_done.get(pair, 0) + 1
        if pair_done[pair] == per_pair:
            pair_total[pair] = 1
        pairs = update.total // per_pair if per_pair else 0
        bar.update(
            task,
            completed=update.done,
            total=update.total,
            description=f"{last.get('src')} -> {last.get('dst')} {last.get('protocol')}",
            pairs=f"{len(pair_total)}/{pairs}",
        )

    campaign = Campaign(
        campaign_settings,
        discovery=context.discovery,
        reporter=reporter,
        creds=context.creds,
        progress=progress,
    )
    with campaign_lock(), stop_on_signals(stop):
        recover_interrupted(reporter)
        reporter.start()
        try:
            with bar:
                result = campaign.run(stop)
        finally:
            reporter.close(flush_timeout=10.0)
    Console().print(summary_table(result, context.file_size, settings.transfers))
    unsent = reporter.spool.depth()
    where = settings.report_to or "no webapp (--report-to not given)"
    console.print(
        f"campaign {result.uuid} {result.state}: {result.ok} ok, {result.failed} failed of "
        f"{result.total}; reported to {where}; {unsent} result(s) wait in the spool "
        f"{reporter.spool.directory}"
    )
    if result.lookups:
        console.print(f"redirector lookups: {result.lookups} taken and reported (--lookups)")
    if result.rtt_checks:
        console.print(rtt_check_summary(result))
    if result.message:
        console.print(f"[red]{result.message}[/red]")
    return 0 if result.state == "finished" and result.failed == 0 else 1


def summary_table(result: CampaignResult, file_size: int, transfers: int) -> Table:
    table = Table(
        title=f"campaign {result.uuid} ({result.state}): {len(result.nodes)} nodes, "
        f"{transfers} x {format_size(file_size)} per measurement"
    )
    targets = any(m.get("rtt_target_ms") is not None for m in result.measurements)
    columns = ["src", "dst", "protocol", "streams", "Gbit/s", "RTT ms", "ok/failed", "error"]
    if targets:  # an emulated WAN: each pair's target RTT beside the measured one
        columns.insert(6, "target")
    sites = any(m.get("scope") == "site" for m in result.measurements)
    if sites:  # through the fronts or m host pairs, and the data servers that received
        columns[4:4] = ["via", "dst servers"]
    for column in columns:
        table.add_column(column, overflow="fold")
    protocols = {
        p: i for i, p in enumerate(dict.fromkeys(m["protocol"] for m in result.measurements))
    }
    order = sorted(
        result.measurements,
        key=lambda m: (
            m["src"],
            m["dst"],
            protocols[m["protocol"]],
            -m["streams"],
            m.get("hosts") or 0,
        ),
    )
    for m in order:
        errors = sorted({t["error_class"] for t in m["transfers"] if t["error_class"]})
        first_message = next((t["message"] for t in m["transfers"] if t["message"]), "")
        rtt = f"{m['rtt_ms']:.3f}" if m.get("rtt_ms") is not None else "n/a"
        if m.get("rtt_within_target") is False:
            rtt += " [bold red]OFF[/bold red]"
        target = [f"{m['rtt_target_ms']:g}" if m.get("rtt_target_ms") is not None else "-"]
        table.add_row(
            m["src"],
            m["dst"],
            m["protocol"],
            str(m["streams"]),
            *(site_cells(m) if sites else []),
            f"{m['throughput_gbps']:.3f}" if m["throughput_gbps"] is not None else "n/a",
            rtt,
            *(target if targets else []),
            f"{m['succeeded']}/{m['failed']}",
            (", ".join(errors) + (f": {first_message[:80]}" if first_message else ""))
            if errors
            else "",
        )
    return table


def site_cells(measured: dict[str, Any]) -> list[str]:
    """A site measurement's "via" (the fronts, or m host pairs of the sweep) and the data
    servers its copies landed on, each with its count."""
    hosts = measured.get("hosts")
    via = "fronts" if hosts is None else f"{hosts} host pair{'s' if hosts > 1 else ''}"
    landed = Counter(
        (t.get("destination_server") or "?").rpartition(":")[0] or "?"
        for t in measured["transfers"]
    )
    return [via, ", ".join(f"{server} x{n}" for server, n in sorted(landed.items()))]


def rtt_check_summary(result: CampaignResult) -> str:
    """The pre-campaign RTT check in one line, naming every pair that was off its target."""
    total, off = len(result.rtt_checks), result.rtt_off
    line = f"RTT check: {total - len(off)}/{total} pairs within 1 ms or 5% of their target"
    if not off:
        return line
    pairs = "; ".join(check.describe() for check in off)
    return f"[bold yellow]{line}; measured anyway, and marked on each measurement: {pairs}[/]"

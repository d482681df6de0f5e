"""`tpcbench lookup`: what each redirector hop of the running site lab costs (fresh names walked
from each level down to the data server holding them; orchestrator/measurement/lookup.py)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict

from rich.console import Console
from rich.table import Table

from orchestrator.errors import UserError
from orchestrator.lab.inventory import load_inventory
from orchestrator.lab.site_servers import level_rtts_ms
from orchestrator.measurement.lookup import LookupRecord, plan_lookups, run_lookup

MAX_REPEAT = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lookup",
        help="time redirector lookups of the running site lab, level by level",
        description="For each site and each redirector level that runs (the site's manager: "
        "local; regional; global), put a fresh small file on one of the site's data servers, "
        "ask that level's redirector for it and follow the redirects by hand, timing each "
        "request (its connection included), then delete the file. Needs a lab started with "
        "--sites (and --redirectors for the levels above the sites). Progress on stderr.",
    )
    parser.add_argument("--entry", help="only this redirector (a-rdr, regional, global)")
    parser.add_argument("--site", help="only files of this site")
    parser.add_argument(
        "--repeat", type=int, default=3, help="lookups (fresh names) per site and level (3)"
    )
    parser.add_argument(
        "--protocol", choices=["https", "root"], default="https",
        help="https (GET, redirects followed by hand) or root (xrdfs stat, XrdCl's log)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the lookup records as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.repeat <= MAX_REPEAT:
        raise UserError(f"--repeat takes 1 to {MAX_REPEAT}, not {args.repeat}")
    inventory = load_inventory()
    if not inventory.redirector_nodes:
        raise UserError(
            "the running lab has no redirectors; start one with e.g. "
            "tpcbench lab up --sites a:2,b:2 --redirectors regional,global"
        )
    names = [r.name for r in inventory.redirector_nodes]
    if args.entry is not None and args.entry not in names:
        raise UserError(f"--entry {args.entry!r} is none of the lab's redirectors: {names}")
    if args.site is not None and args.site not in inventory.sites:
        raise UserError(f"--site {args.site!r} is none of the lab's sites: {list(inventory.sites)}")
    plans = plan_lookups(
        inventory.redirector_nodes,
        inventory.nodes,
        level_rtts=level_rtts_ms(inventory),
        repeat=args.repeat,
        entry=args.entry,
        site=args.site,
    )
    if not plans:
        raise UserError("nothing to look up: that entry serves none of the sites asked for")
    records = []
    for i, plan in enumerate(plans, start=1):
        record = run_lookup(plan, inventory.client, protocol=args.protocol)
        took = f"{record.seconds:.3f} s" if record.seconds is not None else record.message
        print(
            f"lookup {i}/{len(plans)}: {plan.entry.name} for a file of {plan.site} on "
            f"{plan.holder.name}: {record.outcome}, {record.hops} hops, {took}",
            file=sys.stderr,
        )
        records.append(record)
    if args.json:
        print(json.dumps([r.to_json() for r in records], indent=2))
    else:
        Console().print(summary_table(records))
    return 0 if all(r.outcome == "success" for r in records) else 1


def summary_table(records: list[LookupRecord]) -> Table:
    """One row per site and entry: medians of the successful lookups."""
    table = Table(title="redirector lookups (medians of the successful ones)")
    for column in ("SITE", "LEVEL", "ENTRY", "RTT ms", "OK", "HOPS", "SECONDS", "S/HOP"):
        table.add_column(
            column, justify="left" if column in ("SITE", "LEVEL", "ENTRY") else "right"
        )
    groups: dict[tuple[str, str, str], list[LookupRecord]] = defaultdict(list)
    for r in records:
        groups[(r.site, r.level, r.entry)].append(r)
    for (site, level, entry), group in groups.items():
        ok = [r for r in group if r.outcome == "success" and r.seconds is not None]
        rtt = group[0].level_rtt_ms
        seconds = statistics.median(r.seconds for r in ok) if ok else None  # type: ignore[misc]
        hops = statistics.median(r.hops for r in ok) if ok else None
        per_hop = seconds / hops if seconds is not None and hops else None
        table.add_row(
            site, level, entry, "-" if rtt is None else f"{rtt:g}", f"{len(ok)}/{len(group)}",
            "-" if hops is None else f"{hops:g}", "-" if seconds is None else f"{seconds:.3f}",
            "-" if per_hop is None else f"{per_hop:.3f}",
        )  # fmt: skip
    return table

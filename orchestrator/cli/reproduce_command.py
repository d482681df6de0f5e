"""`tpcbench reproduce`: the paper's measurements on the paper-profile lab, with progress and a
summary; `make reproduce` runs it and then the webapp's `paper_report` (docs/reproduce.md)."""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import defaultdict

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from orchestrator.cli.campaign_command import stop_on_signals
from orchestrator.errors import UserError
from orchestrator.lab.inventory import inventory_path, load_inventory
from orchestrator.paths import tpcbench_home
from orchestrator.reproduce.plan import SCALES, plan_reproduction
from orchestrator.reproduce.run import (
    ReproduceResult,
    Reproduction,
    plan_steps,
    reproduce_settings,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reproduce",
        help="the paper's measurements on the paper-profile lab (Figures 3, 4, 5, 7, 8)",
        description="On the running lab of `tpcbench lab up --profile paper`: prelim "
        "concurrency and filesize on its first node (Figures 3 and 4, files scaled like the "
        "lab's), then N campaigns (every ordered pair x https, gridftp x 8, 1 streams, K "
        "transfers, each pair's link baseline first), every result sent to the webapp. "
        "Then `python webapp/manage.py paper_report --out DIR` compares them with the paper.",
    )
    parser.add_argument(
        "--scale",
        choices=tuple(SCALES),
        default="paper",
        help="paper: the profile's K = 11, 12 concurrency levels, 3 campaigns; tiny (the test "
        "suite's): K = 2, 2 levels, 1 campaign, 2 s baselines, on a lab of 3 nodes with 1 MiB "
        "files (default paper)",
    )
    parser.add_argument(
        "--repetitions", type=int, metavar="N", help="campaigns (default: the scale's)"
    )
    parser.add_argument("--report-to", default=None, help="webapp URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--token-file", default=None, help="API token file (or TPCBENCH_API_TOKEN)")
    parser.add_argument(
        "--spool-dir", default=None, help="unsent results (default $TPCBENCH_HOME/spool)"
    )
    parser.set_defaults(func=reproduce)


def reproduce(args: argparse.Namespace) -> int:
    home = tpcbench_home()
    path = inventory_path(home)
    if not path.exists():
        raise UserError(
            "no lab is running; start the paper profile's with: tpcbench lab up --profile paper"
        )
    inventory = load_inventory(path)
    plan = plan_reproduction(inventory, SCALES[args.scale], args.repetitions)
    reporting = {"report_to": args.report_to, "token_file": args.token_file}
    settings = reproduce_settings(plan, {**reporting, "spool_dir": args.spool_dir})
    console = Console(stderr=True)
    for line in plan.describe():
        console.print(f"reproduce: {line}")
    where = settings.report_to or "the spool only (no --report-to)"
    console.print(f"reproduce: results to {where}")

    steps = plan_steps(plan)
    bar = Progress(
        TextColumn("[bold]{task.fields[title]}[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=2,
    )
    tasks = {
        step.key: bar.add_task("waiting", total=step.total, title=step.title, start=False)
        for step in steps
    }

    def progress(key: str, done: int, total: int, what: str) -> None:
        task = tasks[key]
        bar.start_task(task)
        bar.update(task, completed=done, total=total, description=what)

    started = time.monotonic()
    stop = threading.Event()
    run = Reproduction(plan, inventory, settings, home=home, progress=progress)
    with stop_on_signals(stop), bar:
        result = run.run(stop)
    Console().print(steps_table(result))
    Console().print(throughput_table(result))
    total = time.monotonic() - started
    verdict = "interrupted" if result.interrupted else "done"
    console.print(
        f"reproduce: {verdict} in {minutes(total)}; {result.failed} failed point(s) or "
        "measurement(s) (stored with their reasons)"
    )
    if result.unsent and settings.report_to:
        console.print(
            f"[bold yellow]reproduce: {result.unsent} result(s) were not sent and wait in the "
            f"spool {result.spool}[/]"
        )
    console.print(
        "reproduce: next, the paper's findings and figures: "
        ".venv/bin/python webapp/manage.py paper_report --out build/reproduce"
    )
    unsent = result.unsent if settings.report_to else 0  # without a webapp, the spool keeps all
    return 0 if result.failed == 0 and not result.interrupted and not unsent else 1


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def steps_table(result: ReproduceResult) -> Table:
    table = Table(title="reproduce: the steps")
    for column in ("step", "ok", "failed", "time", "what"):
        table.add_column(column, overflow="fold")
    for step in result.steps:
        table.add_row(
            step.title, str(step.ok), str(step.failed), minutes(step.seconds), step.detail
        )
    return table


def throughput_table(result: ReproduceResult) -> Table:
    """Per protocol and streams, over every campaign: the paper's throughput's median and
    range (the findings with their intervals are paper_report's)."""
    rates: dict[tuple[str, int], list[float]] = defaultdict(list)
    for campaign in result.campaigns:
        for m in campaign.measurements:
            if m.get("throughput_gbps") is not None and m["failed"] == 0:
                rates[(m["protocol"], m["streams"])].append(m["throughput_gbps"])
    table = Table(title="campaigns: Gbit/s per measurement (K x S x 8 / mean duration)")
    for column in ("protocol", "streams", "measurements", "median", "min", "max"):
        table.add_column(column, justify="right")
    for (protocol, streams), values in sorted(rates.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        table.add_row(
            protocol,
            str(streams),
            str(len(values)),
            f"{statistics.median(values):.3f}",
            f"{min(values):.3f}",
            f"{max(values):.3f}",
        )
    return table

"""Run a reproduction plan on the running lab: the preliminary sweeps on one node, then the
campaigns, every result through one reporter (spooled first, then sent to the webapp).

The steps are the commands' own code paths: `prelim concurrency|filesize` (prelim/sweeps.py
between two server instances on one node) and `campaign run --baseline` (campaign/run.py);
nothing here measures in a way of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.campaign.context import build_context, build_reporter, campaign_lock
from orchestrator.campaign.result import CampaignProgress, CampaignResult
from orchestrator.campaign.run import Campaign
from orchestrator.campaign.settings import PARSERS, Settings, load_settings
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.lifecycle import run_record_path
from orchestrator.lab.run_record import LabRun
from orchestrator.prelim.memory import check_fits, memory_budget
from orchestrator.prelim.pair import lab_pair
from orchestrator.prelim.sweeps import METHODS, PrelimRun, concurrency_sweep, filesize_sweep
from orchestrator.report.reporter import Reporter
from orchestrator.reproduce.plan import ReproducePlan

# (step key, points or measurements done, the step's total, what was just done)
Progress = Callable[[str, int, int, str], None]
PRELIM_TIMEOUT = 600.0  # seconds per copy, as `tpcbench prelim`


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    total: int  # points or measurements


@dataclass
class StepResult:
    key: str
    title: str
    seconds: float
    ok: int
    failed: int
    detail: str = ""


@dataclass
class ReproduceResult:
    steps: list[StepResult] = field(default_factory=list)
    prelim_runs: list[PrelimRun] = field(default_factory=list)
    campaigns: list[CampaignResult] = field(default_factory=list)
    interrupted: bool = False
    unsent: int = 0  # results still in the spool after the last try to send them
    spool: str = ""

    @property
    def failed(self) -> int:
        return sum(step.failed for step in self.steps)


def plan_steps(plan: ReproducePlan) -> list[Step]:
    """The steps in the order they run, with how many points or measurements each takes."""
    scale, sizes = plan.scale, len(plan.filesize_sizes)
    steps = [
        Step("concurrency", "Figure 3: prelim concurrency", scale.prelim_max * len(METHODS)),
        Step("filesize", "Figure 4: prelim filesize", scale.filesize_max * sizes),
    ]
    steps += [
        Step(f"campaign-{i}", f"campaign {i}/{plan.repetitions}", plan.per_campaign)
        for i in range(1, plan.repetitions + 1)
    ]
    return steps


def reproduce_settings(plan: ReproducePlan, reporting: dict[str, Any]) -> Settings:
    """The orchestrator's settings for the campaigns: the plan's, then `reporting`
    (report_to, token_file, spool_dir). Flags the orchestrator does not know are left out."""
    flags = {**plan.campaign_flags(), **{k: v for k, v in reporting.items() if v is not None}}
    return load_settings({k: v for k, v in flags.items() if k in PARSERS})


class Reproduction:
    """One run of a plan; `progress` is called after every point and measurement."""

    def __init__(
        self,
        plan: ReproducePlan,
        inventory: LabInventory,
        settings: Settings,
        *,
        home: Path,
        progress: Progress | None = None,
    ) -> None:
        self.plan = plan
        self.inventory = inventory
        self.settings = settings
        self.home = home
        self.progress = progress or (lambda key, done, total, what: None)
        self.result = ReproduceResult()

    def run(self, stop: threading.Event) -> ReproduceResult:
        steps = plan_steps(self.plan)
        self._check_memory()
        reporter = build_reporter(self.settings)
        # No recovery of other campaigns' journals here (campaign run does it): a reproduction
        # reports its own results only, into a webapp that may hold nothing else.
        with campaign_lock(self.home):
            reporter.start()
            try:
                for step in steps:
                    if stop.is_set():
                        self.result.interrupted = True
                        break
                    started = time.monotonic()
                    done = self._run_step(step, reporter, stop)
                    done.seconds = time.monotonic() - started
                    self.result.steps.append(done)
            finally:
                reporter.close(flush_timeout=10.0)
                self.result.unsent = reporter.spool.depth()
                self.result.spool = str(reporter.spool.directory)
        return self.result

    def _check_memory(self) -> None:
        """The sweeps' memory guard, before anything runs (the largest file and its copies)."""
        record = LabRun.load(run_record_path(self.home))
        budget = memory_budget(lab_data_dir(record.network.prefix))
        scale = self.plan.scale
        check_fits(max(self.plan.filesize_sizes), scale.filesize_max, budget)
        check_fits(self.plan.file_size, scale.prelim_max, budget)

    def _run_step(self, step: Step, reporter: Reporter, stop: threading.Event) -> StepResult:
        if step.key in ("concurrency", "filesize"):
            return self._prelim(step, reporter)
        return self._campaign(step, reporter, stop)

    def _prelim(self, step: Step, reporter: Reporter) -> StepResult:
        plan, done = self.plan, [0]

        def point_done(point: dict[str, Any]) -> None:
            done[0] += 1
            rate = point["throughput_gbps"]
            shown = "failed" if rate is None else f"{rate:.2f} Gbit/s"
            what = f"{point['method']} x{point['concurrency']} {point['file_size'] >> 20} MiB"
            self.progress(step.key, done[0], step.total, f"{what}: {shown}")

        scale = plan.scale
        with lab_pair(self.home, self.inventory, plan.prelim_node) as pair:
            if step.key == "concurrency":
                run = concurrency_sweep(
                    pair,
                    file_size=plan.file_size,
                    max_concurrency=scale.prelim_max,
                    timeout=PRELIM_TIMEOUT,
                    progress=point_done,
                )
            else:
                run = filesize_sweep(
                    pair,
                    sizes=plan.filesize_sizes,
                    max_concurrency=scale.filesize_max,
                    timeout=PRELIM_TIMEOUT,
                    progress=point_done,
                )
        outcome = reporter.report_result("prelim", run.to_json())
        self.result.prelim_runs.append(run)
        failed = sum(1 for p in run.points if p["failed"] or p["throughput_gbps"] is None)
        return StepResult(
            step.key,
            step.title,
            0.0,
            len(run.points) - failed,
            failed,
            f"prelim run {run.uuid} ({outcome})",
        )

    def _campaign(self, step: Step, reporter: Reporter, stop: threading.Event) -> StepResult:
        context = build_context(self.settings)
        settings = context.campaign_settings(self.settings, trigger="cli")

        def measured(update: CampaignProgress) -> None:
            last = update.last or {}
            rate = last.get("throughput_gbps")
            shown = "failed" if rate is None else f"{rate:.2f} Gbit/s"
            what = f"{last.get('src')} -> {last.get('dst')} {last.get('protocol')} "
            what += f"{last.get('streams')} stream(s): {shown}"
            self.progress(step.key, update.done, update.total, what)

        campaign = Campaign(
            settings,
            discovery=context.discovery,
            reporter=reporter,
            creds=context.creds,
            home=self.home,
            progress=measured,
        )
        result = campaign.run(stop)
        self.result.campaigns.append(result)
        if result.state == "interrupted":
            self.result.interrupted = True
        detail = f"campaign {result.uuid} {result.state}"
        if result.message:
            detail += f": {result.message}"
        failed = max(result.failed, 1) if result.state == "failed" else result.failed
        return StepResult(step.key, step.title, 0.0, result.ok, failed, detail)

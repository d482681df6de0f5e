"""One campaign: discover, plan, measure every pair contention-free, report each result.

A `Campaign` is its settings (`CampaignSettings`) and its collaborators (discovery, reporter,
the measuring functions). It runs on one asyncio event loop: the measurements are tasks that
never share a node (`planner.NodeDisjointTasks`); the blocking calls (discovery, the
reporter's fsync and POST, the journal, iperf3) run in threads through `asyncio.to_thread`.

Each finished measurement is spooled (fsync) by the reporter before it is sent, and then
listed in the campaign's journal (`campaign_journal.py`), so a SIGKILL at any point loses
no finished measurement, and the webapp's uuid idempotency means nothing is stored twice.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid as uuidlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.campaign.cycle_book import CycleBook
from orchestrator.campaign.duplex import DuplexScheduler
from orchestrator.campaign.journal import (
    CampaignJournal,
    campaign_payload,
    campaigns_dir,
)
from orchestrator.campaign.pair_baselines import PairBaselines
from orchestrator.campaign.pair_context import with_pair_context
from orchestrator.campaign.planner import NodeDisjointTasks
from orchestrator.campaign.result import CampaignProgress, CampaignResult, failed_record
from orchestrator.campaign.rtt_check import RttCheck, check_pair_rtts
from orchestrator.campaign.settings import CampaignSettings
from orchestrator.campaign.site_scope import (
    SiteFront,
    discover_fronts,
    plan_campaign_specs,
    report_lookups,
    site_request,
)
from orchestrator.endpoints import ClientCredentials, Endpoint, reported_site
from orchestrator.latency import measure_rtt, rtt_origin
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest, MeasurementSpec
from orchestrator.prelim.baseline import (
    Baseline,
    measure_baseline,
)
from orchestrator.report.reporter import Reporter
from orchestrator.transfers.record import iso

if TYPE_CHECKING:
    from orchestrator.discovery import Discovery

log = logging.getLogger(__name__)

Progress = Callable[[CampaignProgress], None]
Pair = tuple[str, str]
RTT_PORT_PREFERENCE = ("https", "gridftp", "root")
STOP_POLL_SECONDS = 0.2  # how soon a stop set by a signal handler is seen


def rtt_port(dst: Endpoint) -> int:
    for protocol in RTT_PORT_PREFERENCE:
        if protocol in dst.ports:
            return dst.ports[protocol]
    return next(iter(dst.ports.values()))


async def wait_until_set(stop: threading.Event) -> None:
    """Returns once `stop` is set; a signal handler or another thread sets it, so it is polled."""
    while not stop.is_set():
        await asyncio.sleep(STOP_POLL_SECONDS)


class Campaign:
    """One campaign, run once; never raises for a failed transfer or a vanished node.

    `measure` takes a `MeasurementRequest` and the options (`run_measurement`'s); it is
    awaited (a plain function's record is taken as is); `rtt` is awaited;
    `link_baseline` blocks (it runs in a thread). `progress` is called after each measurement.
    """

    def __init__(
        self,
        settings: CampaignSettings,
        *,
        discovery: Discovery,
        reporter: Reporter,
        measure: Callable[..., Any] = run_measurement,
        rtt: Callable[..., Any] = measure_rtt,
        link_baseline: Callable[..., Baseline] = measure_baseline,
        creds: ClientCredentials | None = None,
        home: Path | None = None,
        progress: Progress | None = None,
        uuid: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings
        self.clock = clock or (lambda: datetime.now(UTC))  # against settings.deadline
        self.discovery = discovery
        self.reporter = reporter
        self.measure = measure
        self.rtt = rtt
        self.home = home
        self.progress = progress
        self.uuid = str(uuidlib.UUID(uuid)) if uuid else str(uuidlib.uuid4())
        self.measure_options = dict(settings.measure_options)
        if creds is not None:
            self.measure_options["creds"] = creds
        self.journal: CampaignJournal | None = None
        self.result: CampaignResult | None = None
        self.endpoints: dict[str, Endpoint] = {}
        self.fronts: dict[str, SiteFront] = {}  # --scope site: each site's front by name
        self.ready: set[str] = set()  # the nodes discovery still reports
        self.vanished: dict[str, str] = {}  # node -> why its measurements failed
        self.rtts: dict[Pair, float | None] = {}  # per ordered pair, taken once
        self.rtt_checks: dict[Pair, RttCheck] = {}  # pairs with an emulated WAN's target
        self.baselines = PairBaselines(settings, link_baseline, reporter, self.uuid)
        self.book = CycleBook(settings, home, self.clock)  # fitting the cycle, its counters
        self._last_discovery = 0.0

    # -- the run ---------------------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> CampaignResult:
        """Run the campaign now, on its own event loop.

        `stop` (e.g. SIGTERM) stops new measurements from starting; running ones finish, or
        are cancelled (and not reported) after `stop_grace` seconds; the campaign is then
        "interrupted".
        """
        if self.journal is not None:
            raise RuntimeError(f"campaign {self.uuid} has already run")
        return asyncio.run(self._run(stop or threading.Event()))

    async def _run(self, stop: threading.Event) -> CampaignResult:
        # every pair's blocking calls at once, not queued behind the default pool's size
        workers = self.settings.max_parallel_pairs + 4
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(workers, thread_name_prefix="campaign")
        )
        await asyncio.to_thread(self._start_journal)
        try:
            discovered = await asyncio.to_thread(self.discovery.discover)
        except Exception as exc:  # the cluster API down: a failed campaign, not a crash
            log.exception("discovery failed")
            failed = CampaignResult(self.uuid, "failed", [], 0, message=f"discovery failed: {exc}")
            return await self._finish("failed", failed)
        self.endpoints = {e.name: e for e in discovered}
        self.ready = set(self.endpoints)
        if self.settings.scope == "site":
            self.fronts = await asyncio.to_thread(discover_fronts, self.discovery, discovered)
            self.ready |= set(self.fronts)
        # Nodes of the mesh that cannot be measured now (a NotReady node, a crashing server)
        # stay in the plan: their measurements are stored as failures saying why.
        not_ready = getattr(self.discovery, "not_ready", dict)()
        self.vanished.update({n: why for n, why in not_ready.items() if n not in self.ready})
        self._last_discovery = time.monotonic()
        names = sorted(self.ready | set(self.vanished))
        await asyncio.to_thread(self._journal.set_state, "running", nodes=names)
        problem = self._cannot_start()
        if problem:
            return await self._finish(
                "failed", CampaignResult(self.uuid, "failed", names, 0, message=problem)
            )
        specs = plan_campaign_specs(self.settings, names, self.fronts)
        for why in self.settings.unsupported():
            log.warning("left out of the plan: %s", why)
        specs = await asyncio.to_thread(self.book.fit, specs, self._journal)
        self.result = CampaignResult(self.uuid, "running", names, len(specs))
        # An emulated WAN (lab --rtt) promises RTTs: check them all before measuring anything.
        if any(e.rtt_targets_ms for e in self.endpoints.values()) and not stop.is_set():
            await self._check_rtts()
        if self.settings.lookups and not stop.is_set():  # alone on the redirectors, first
            creds = self.measure_options.get("creds")
            self.result.lookups = await asyncio.to_thread(
                report_lookups,
                self.discovery,
                discovered,
                creds,
                self.settings,
                self.reporter,
                self.uuid,
            )
        await self._measure_all(specs, stop)
        complete = len(self.result.measurements) == len(specs)
        return await self._finish(
            "finished" if complete or not stop.is_set() else "interrupted", self.result
        )

    def _cannot_start(self) -> str:
        """Why this campaign cannot measure anything, or ""."""
        if self.settings.scope == "site" and len(self.fronts) < 2:
            return (
                f"a site campaign needs at least 2 sites, each with a redirector and data "
                f"servers; discovery found {len(self.fronts)} ({', '.join(self.fronts)})"
            )
        if len(self.endpoints) < 2:
            unready = "".join(f"; {why}" for why in self.vanished.values())
            found = len(self.endpoints)
            return f"a campaign needs at least 2 ready nodes, discovery found {found}{unready}"
        return self.baselines.problem(self.endpoints.values())

    async def _check_rtts(self) -> None:
        assert self.result is not None
        self.rtt_checks = await check_pair_rtts(list(self.endpoints.values()), self.rtt, rtt_port)
        self.rtts.update({pair: check.measured_ms for pair, check in self.rtt_checks.items()})
        self.result.rtt_checks = list(self.rtt_checks.values())
        checks = [check.to_json() for check in self.rtt_checks.values()]
        await asyncio.to_thread(self._journal.set_state, "running", rtt_checks=checks)
        for off in self.result.rtt_off:
            log.warning("RTT off its target before the campaign: %s", off.describe())

    async def _measure_all(self, specs: list[MeasurementSpec], stop: threading.Event) -> None:
        """Every spec, node-disjoint; after a stop, the grace period, then cancellation."""
        tasks = NodeDisjointTasks(
            specs,
            self.settings.max_parallel_pairs,
            self._measure_one,
            self._record,
            skip=self._skip,
            scheduler_class=DuplexScheduler if self.settings.full_duplex else None,
        )
        measuring = asyncio.create_task(tasks.run(stop))
        stopped = asyncio.create_task(wait_until_set(stop))
        await asyncio.wait({measuring, stopped}, return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        grace = self.settings.stop_grace
        if not measuring.done() and grace is not None:
            done, _ = await asyncio.wait({measuring}, timeout=grace)
            if not done:
                tasks.cancel_running()
        await measuring

    # -- one measurement -------------------------------------------------------------------

    async def _measure_one(self, spec: MeasurementSpec) -> dict[str, Any]:
        settings = self.settings
        if spec.scope == "site":  # the RTT, links and buffers are the sites' first hosts'
            request = site_request(spec, self.fronts, settings.transfers, settings.file_size)
            src, dst = self.fronts[spec.src].hosts[0], self.fronts[spec.dst].hosts[0]
        else:
            src, dst = self.endpoints[spec.src], self.endpoints[spec.dst]
            request = MeasurementRequest(spec, src, dst, settings.transfers, settings.file_size)
        # The first measurement of an ordered pair takes its RTT (and its link baseline),
        # while both nodes are ours.
        rtt_ms = await self._pair_rtt(src, dst)
        await self.baselines.take(src, dst)
        outcome = self.measure(
            request, campaign=self.uuid, measure_latency=False, **self.measure_options
        )
        record = await outcome if inspect.isawaitable(outcome) else outcome
        record.rtt_ms = rtt_ms
        from_orchestrator = self.rtt is measure_rtt and rtt_origin(src) == "orchestrator"
        check = self.rtt_checks.get((src.name, dst.name))
        return with_pair_context(record.to_json(), src, dst, check, from_orchestrator)

    async def _pair_rtt(self, src: Endpoint, dst: Endpoint) -> float | None:
        pair = (src.name, dst.name)
        if pair not in self.rtts:
            try:
                self.rtts[pair] = await self.rtt(src, dst, rtt_port(dst))
            except Exception as exc:  # an RTT we could not take is None, not a crash
                log.warning("RTT %s -> %s failed: %s", src.name, dst.name, exc)
                self.rtts[pair] = None
        return self.rtts[pair]

    async def _skip(self, spec: MeasurementSpec) -> bool:
        """Not started: past the deadline (missed), or a node gone; else its start time."""
        if self.book.past_deadline(spec) or await self._node_gone(spec):
            return True
        self.book.began(spec)
        return False

    async def _node_gone(self, spec: MeasurementSpec) -> bool:
        """Re-ask discovery now and then; a node gone since the start fails its specs."""
        if time.monotonic() - self._last_discovery >= self.settings.rediscover_every:
            self._last_discovery = time.monotonic()
            try:
                now_ready = {e.name for e in await asyncio.to_thread(self.discovery.discover)}
                now_ready |= set(self.fronts)  # a dead front fails its copies, with why
            except Exception as exc:
                log.warning("re-discovery failed (%s); keeping the node list", exc)
            else:
                for name in self.ready - now_ready:
                    self.vanished[name] = (
                        f"node {name} is no longer ready (gone from discovery during campaign)"
                    )
                self.ready &= now_ready
        return not spec.nodes <= self.ready

    async def _record(
        self, spec: MeasurementSpec, measured: dict[str, Any] | None, error: BaseException | None
    ) -> None:
        """A measurement ended (or was skipped): report it, journal it, count it."""
        assert self.result is not None
        if isinstance(error, asyncio.CancelledError):
            return  # cut short by the stop grace period: not a finished measurement
        ok = None if error is not None or measured is None else True
        if not self.book.ended(spec, ok):  # missed: counted, not reported: it never began
            return
        if error is not None:  # a bug or an unexpected tool error: recorded, not raised
            log.error("measurement %s crashed", spec.key, exc_info=error)
            message = f"orchestrator error while measuring: {type(error).__name__}: {error}"
            measured = self._failed(spec, "remote-failure", message)
        elif measured is None:  # skipped: one of its nodes vanished
            gone = sorted(n for n in spec.nodes if n in self.vanished)
            reason = "; ".join(self.vanished[n] for n in gone) or "node not ready"
            measured = self._failed(spec, "connect", reason, self.rtts.get((spec.src, spec.dst)))
        sent = await asyncio.to_thread(self._keep, measured)
        self.result.measurements.append(measured)
        self.book.count(measured)
        if self.progress is not None:
            done = len(self.result.measurements)
            self.progress(CampaignProgress(done, self.result.total, measured, sent))

    def _failed(
        self, spec: MeasurementSpec, error_class: str, message: str, rtt_ms: float | None = None
    ) -> dict[str, Any]:
        settings = self.settings
        record = failed_record(
            spec, settings.transfers, settings.file_size, self.uuid, error_class, message, rtt_ms
        )
        if spec.scope == "site":
            record.src_site, record.dst_site = (self.fronts[n].site for n in (spec.src, spec.dst))
        else:
            record.src_site, record.dst_site = (
                reported_site(self.endpoints[n].site) if n in self.endpoints else None
                for n in (spec.src, spec.dst)
            )
        return record.to_json()

    # -- the journal and the webapp (blocking: called in threads) --------------------------

    @property
    def _journal(self) -> CampaignJournal:
        assert self.journal is not None
        return self.journal

    def _keep(self, measured: dict[str, Any]) -> str:
        sent = self.reporter.report(measured)  # spooled durably before anything else
        self._journal.add_measurement(measured["uuid"])
        return sent

    def _start_journal(self) -> None:
        settings = self.settings
        self.journal = CampaignJournal.create(
            campaigns_dir(self.home),
            self.uuid,
            trigger=settings.trigger,
            schedule=settings.schedule_expr,
            started=iso(datetime.now(UTC)),
            protocols=list(settings.protocols),
            streams=list(settings.streams),
            auths=list(settings.auths),
            clients=list(settings.clients),
            checksums=list(settings.checksums),
            transfers=settings.transfers,
            file_size=settings.file_size,
            max_parallel_pairs=settings.max_parallel_pairs,
        )
        self.reporter.report_campaign(self.uuid, campaign_payload(self.journal.data))

    async def _finish(self, state: str, result: CampaignResult) -> CampaignResult:
        def save() -> None:
            counters = self.book.close()
            self._journal.set_state(state, finished=iso(datetime.now(UTC)), **counters)
            self.reporter.report_campaign(self.uuid, campaign_payload(self._journal.data))

        await asyncio.to_thread(save)
        result.state = state
        self.result = result
        return result

"""One campaign: discover, plan, measure every pair contention-free, report each result.

Order of durability for each finished measurement: spool (fsync) -> journal -> POST. A
SIGKILL at any point therefore loses no finished measurement, and the webapp's uuid
idempotency means nothing is stored twice. The journal
($TPCBENCH_HOME/campaigns/<uuid>.json) lists the finished measurement uuids and the
campaign's state; a campaign still "running" in its journal when the orchestrator starts
again was interrupted, and is marked so (`recover_interrupted`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import uuid as uuidlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.campaign_journal import (
    CampaignJournal,
    campaign_payload,
    campaigns_dir,
)
from orchestrator.campaign_journal import recover_interrupted as recover_interrupted
from orchestrator.campaign_result import CampaignProgress, CampaignResult, failed_record
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.latency import measure_rtt, rtt_origin
from orchestrator.measurement import run_measurement
from orchestrator.planner import (
    DEFAULT_PROTOCOLS,
    DEFAULT_STREAMS,
    MeasurementSpec,
    plan_campaign,
    schedule,
)
from orchestrator.prelim.baseline import DEFAULT_SECONDS as DEFAULT_BASELINE_SECONDS
from orchestrator.prelim.baseline import Baseline, check_baseline_possible, measure_baseline
from orchestrator.reporter import Reporter
from orchestrator.rtt_check import RttCheck, check_pair_rtts
from orchestrator.transfers.record import iso

if TYPE_CHECKING:
    from orchestrator.discovery import Discovery

log = logging.getLogger(__name__)

Progress = Callable[["CampaignProgress"], None]
RTT_PORT_PREFERENCE = ("https", "gridftp", "root")


def _rtt_port(dst: Endpoint) -> int:
    for protocol in RTT_PORT_PREFERENCE:
        if protocol in dst.ports:
            return dst.ports[protocol]
    return next(iter(dst.ports.values()))


class MeasurementCancelled(Exception):
    """A measurement cut short at shutdown: it did not finish, so it is not reported."""


class _Cancellable:
    """Runs coroutines on per-thread event loops and can cancel them all (SIGTERM grace)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = set()
        self.cancelled = False

    def run(self, awaitable: Any) -> Any:
        async def wrapper() -> Any:
            task = asyncio.current_task()
            assert task is not None
            entry = (asyncio.get_running_loop(), task)
            with self._lock:
                if self.cancelled:
                    raise asyncio.CancelledError
                self._tasks.add(entry)
            try:
                return await awaitable
            finally:
                with self._lock:
                    self._tasks.discard(entry)

        return asyncio.run(wrapper())

    def cancel_all(self) -> None:
        with self._lock:
            self.cancelled = True
            for loop, task in self._tasks:
                loop.call_soon_threadsafe(task.cancel)


def run_campaign(
    discovery: Discovery,
    *,
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    streams: Sequence[int] = DEFAULT_STREAMS,
    transfers: int = 11,
    file_size: int = 2**30,
    max_parallel_pairs: int = 1,
    reporter: Reporter,
    measure: Callable[..., Any] = run_measurement,
    campaign_uuid: str | None = None,
    progress: Progress | None = None,
    creds: ClientCredentials | None = None,
    stop: threading.Event | None = None,
    stop_grace: float | None = None,
    trigger: str = "cli",
    schedule_expr: str = "",
    home: Path | None = None,
    rtt: Callable[..., Any] = measure_rtt,
    rediscover_every: float = 30.0,
    measure_options: dict[str, Any] | None = None,
    baseline: bool = False,
    baseline_seconds: int = DEFAULT_BASELINE_SECONDS,
    link_baseline: Callable[..., Baseline] = measure_baseline,
) -> CampaignResult:
    """Run one campaign now; never raises for a failed transfer or a vanished node.

    `stop` (e.g. SIGTERM) stops new measurements from starting; running ones finish, or
    after `stop_grace` seconds are cancelled; the campaign is then "interrupted".
    With `baseline`, each ordered pair's link is measured (iperf3) before its first
    measurement, while both nodes are reserved, and reported as a baseline.
    """
    campaign_uuid = str(uuidlib.UUID(campaign_uuid)) if campaign_uuid else str(uuidlib.uuid4())
    stop = stop or threading.Event()
    started = iso(datetime.now(UTC))
    journal = CampaignJournal.create(
        campaigns_dir(home),
        campaign_uuid,
        trigger=trigger,
        schedule=schedule_expr,
        started=started,
        protocols=list(protocols),
        streams=list(streams),
        transfers=transfers,
        file_size=file_size,
        max_parallel_pairs=max_parallel_pairs,
    )
    reporter.report_campaign(campaign_uuid, campaign_payload(journal.data))

    def finish(state: str, result: CampaignResult) -> CampaignResult:
        journal.set_state(state, finished=iso(datetime.now(UTC)))
        reporter.report_campaign(campaign_uuid, campaign_payload(journal.data))
        result.state = state
        return result

    try:
        endpoints = {e.name: e for e in discovery.discover()}
    except Exception as exc:  # the cluster API down: a failed campaign, not a crash
        log.exception("discovery failed")
        return finish(
            "failed",
            CampaignResult(campaign_uuid, "failed", [], 0, message=f"discovery failed: {exc}"),
        )
    journal.set_state("running", nodes=sorted(endpoints))
    if len(endpoints) < 2:
        message = f"a campaign needs at least 2 ready nodes, discovery found {len(endpoints)}"
        return finish(
            "failed", CampaignResult(campaign_uuid, "failed", sorted(endpoints), 0, message=message)
        )

    if baseline:
        try:
            for endpoint in endpoints.values():
                check_baseline_possible(endpoint, endpoint)
        except UserError as exc:
            return finish(
                "failed",
                CampaignResult(campaign_uuid, "failed", sorted(endpoints), 0, message=str(exc)),
            )
    specs = plan_campaign(list(endpoints), protocols, streams)
    result = CampaignResult(campaign_uuid, "running", sorted(endpoints), len(specs))
    rtts: dict[tuple[str, str], float | None] = {}
    rtt_lock = threading.Lock()
    runner = _Cancellable()
    results_lock = threading.Lock()
    ready = set(endpoints)
    last_discovery = [time.monotonic()]
    vanished_reason: dict[str, str] = {}
    options = dict(measure_options or {})
    if creds is not None:
        options["creds"] = creds

    async def pair_rtt(src: Endpoint, dst: Endpoint) -> float | None:
        key = (src.name, dst.name)
        with rtt_lock:
            if key in rtts:
                return rtts[key]
        try:
            value = await rtt(src, dst, _rtt_port(dst))
        except Exception as exc:  # an RTT we could not take is None, not a crash
            log.warning("RTT %s -> %s failed: %s", src.name, dst.name, exc)
            value = None
        with rtt_lock:
            rtts[key] = value
        return value

    baselines: set[tuple[str, str]] = set()

    async def pair_baseline(src: Endpoint, dst: Endpoint) -> None:
        key = (src.name, dst.name)
        with rtt_lock:
            if not baseline or key in baselines:
                return
            baselines.add(key)
        # a failed baseline comes back as data (its error), never as an exception
        measured = await asyncio.to_thread(
            link_baseline, src, dst, campaign=campaign_uuid, seconds=baseline_seconds
        )
        reporter.report_result("baseline", measured.to_json())

    async def measure_one(spec: MeasurementSpec) -> dict[str, Any]:
        src, dst = endpoints[spec.src], endpoints[spec.dst]
        # The first measurement of an ordered pair takes its RTT (and its link baseline),
        # while both nodes are ours.
        rtt_ms = await pair_rtt(src, dst)
        await pair_baseline(src, dst)
        outcome = measure(
            src,
            dst,
            spec.protocol,
            spec.streams,
            transfers,
            file_size,
            campaign=campaign_uuid,
            measure_latency=False,
            **options,
        )
        record = await outcome if inspect.isawaitable(outcome) else outcome
        record.rtt_ms = rtt_ms
        measured = record.to_json()
        for role, node in (("src", src), ("dst", dst)):
            # the webapp's grid thresholds follow the links; None: not known (any more)
            measured[f"{role}_link_gbps"] = node.link_gbps or None
        check = checks.get((src.name, dst.name))
        if check is not None:  # the emulated WAN's promise, kept or not, goes with the result
            measured["rtt_target_ms"] = check.target_ms
            measured["rtt_within_target"] = check.within_target
        if rtt is measure_rtt and rtt_ms is not None and rtt_origin(src) == "orchestrator":
            measured["rtt_from"] = "orchestrator"  # not the source's position (webapp ignores it)
        return measured

    # An emulated WAN (lab --rtt) promises RTTs: check them all before measuring anything.
    checks: dict[tuple[str, str], RttCheck] = {}
    if any(e.rtt_targets_ms for e in endpoints.values()) and not stop.is_set():
        checks = runner.run(check_pair_rtts(list(endpoints.values()), rtt, _rtt_port))
        rtts.update({key: check.measured_ms for key, check in checks.items()})
        result.rtt_checks = list(checks.values())
        journal.set_state("running", rtt_checks=[c.to_json() for c in checks.values()])
        for off in result.rtt_off:
            log.warning("RTT off its target before the campaign: %s", off.describe())

    def run_one(spec: MeasurementSpec) -> dict[str, Any]:
        try:
            return runner.run(measure_one(spec))
        except asyncio.CancelledError:
            raise MeasurementCancelled(spec.key) from None
        except Exception as exc:  # a bug or an unexpected tool error: recorded, not raised
            log.exception("measurement %s crashed", spec.key)
            return failed_record(
                spec,
                transfers,
                file_size,
                campaign_uuid,
                "remote-failure",
                f"orchestrator error while measuring: {type(exc).__name__}: {exc}",
            ).to_json()

    def vanished(spec: MeasurementSpec) -> bool:
        """Re-ask discovery now and then; a node gone since the start fails its specs."""
        if time.monotonic() - last_discovery[0] >= rediscover_every:
            last_discovery[0] = time.monotonic()
            try:
                now_ready = {e.name for e in discovery.discover()}
            except Exception as exc:
                log.warning("re-discovery failed (%s); keeping the node list", exc)
            else:
                for name in ready - now_ready:
                    vanished_reason[name] = (
                        f"node {name} is no longer ready (gone from discovery during campaign)"
                    )
                ready.intersection_update(now_ready)
        return not spec.nodes <= ready

    def on_done(spec: MeasurementSpec, measured: Any, error: BaseException | None) -> None:
        if isinstance(error, MeasurementCancelled):
            return  # cut short by the stop grace period: not a finished measurement
        if measured is None:  # skipped: one of its nodes vanished
            gone = sorted(n for n in spec.nodes if n in vanished_reason)
            reason = "; ".join(vanished_reason[n] for n in gone) or "node not ready"
            measured = failed_record(
                spec,
                transfers,
                file_size,
                campaign_uuid,
                "connect",
                reason,
                rtts.get((spec.src, spec.dst)),
            ).to_json()
        elif error is not None:
            measured = failed_record(
                spec, transfers, file_size, campaign_uuid, "remote-failure", str(error)
            ).to_json()
        sent = reporter.report(measured)  # spooled durably before anything else
        journal.add_measurement(measured["uuid"])
        with results_lock:
            result.measurements.append(measured)
            done = len(result.measurements)
        if progress is not None:
            progress(CampaignProgress(done, len(specs), measured, sent))

    def watch_stop() -> None:
        while not campaign_done.is_set():
            if stop.wait(0.2):
                if stop_grace is not None and not campaign_done.wait(stop_grace):
                    runner.cancel_all()
                return

    campaign_done = threading.Event()
    watcher = threading.Thread(target=watch_stop, name="campaign-stop", daemon=True)
    watcher.start()
    try:
        schedule(
            specs,
            max_parallel_pairs,
            run_one,
            on_done=on_done,
            stop=stop,
            skip=vanished,
        )
    finally:
        campaign_done.set()
    complete = len(result.measurements) == len(specs)
    state = "finished" if complete or not stop.is_set() else "interrupted"
    return finish(state, result)

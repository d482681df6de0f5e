"""`tpcbench orchestrator`: campaigns on a cron schedule and on request, one at a time.

The loop (rucio daemon shape: `run(once=False, stop=Event())`) starts a campaign when the
cron schedule (plus a random slip, like pScheduler's `slip`/`sliprand`) is due, or when the
webapp holds a pending "run now" campaign. Campaigns run on the loop's own thread, so two
can never overlap; a machine-wide lock also keeps `tpcbench campaign run` out meanwhile.
A scheduled time that passes while a campaign runs is skipped, not queued; but a scheduled
campaign starts no measurement after the next scheduled time (they are missed: its
deadline), and when its last ones end after that time, the next campaign starts at once.
A scheduled campaign longer than its cycle is fitted to it (campaign/rotation.py).
"""

from __future__ import annotations

import logging
import random
import threading
import uuid as uuidlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from croniter import croniter

from orchestrator.campaign.context import (
    CampaignContext,
    build_context,
    build_reporter,
    campaign_lock,
)
from orchestrator.campaign.cycle_times import cycle_seconds, next_firing
from orchestrator.campaign.journal import recover_interrupted
from orchestrator.campaign.result import CampaignProgress, CampaignResult
from orchestrator.campaign.run import Campaign
from orchestrator.campaign.settings import Settings
from orchestrator.errors import UserError
from orchestrator.measurement.run import run_measurement
from orchestrator.report.reporter import Reporter
from orchestrator.service.metrics import MetricsServer, ServiceMetrics
from orchestrator.transfers.record import iso

log = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


def validate_cron(expression: str) -> str:
    if not croniter.is_valid(expression):
        raise UserError(f"{expression!r} is not a cron expression (e.g. '0 0,12 * * *')")
    return expression


def next_run(
    expression: str, after: datetime, slip: float = 0.0, rng: random.Random | None = None
) -> datetime:
    """The first cron time strictly after `after`, delayed by a random slip in [0, slip).

    The slip is clipped to the gap before the following cron time, so a slipped run never
    lands in the next slot (pScheduler clips `slip` against `repeat` the same way).
    """
    times = croniter(expression, after)
    base: datetime = times.get_next(datetime)
    following: datetime = times.get_next(datetime)
    window = min(slip, (following - base).total_seconds())
    delay = (rng or random).uniform(0, window) if window > 0 else 0.0
    return base + timedelta(seconds=delay)


class ScheduleClock:
    """Pure: when is the next scheduled campaign due? No sleeping, no threads."""

    def __init__(
        self,
        expression: str,
        now: datetime,
        *,
        slip: float = 0.0,
        rng: random.Random | None = None,
        run_on_start: bool = False,
    ) -> None:
        self.expression = validate_cron(expression)
        self.slip = slip
        self.rng = rng or random.Random()
        self.next_at = now if run_on_start else next_run(expression, now, slip, self.rng)

    def due(self, now: datetime) -> bool:
        return now >= self.next_at

    def seconds_until_due(self, now: datetime) -> float:
        return max(0.0, (self.next_at - now).total_seconds())

    def campaign_ended(self, now: datetime) -> None:
        """Plan the next run after `now`: slots missed while a campaign ran are skipped."""
        self.next_at = next_run(self.expression, now, self.slip, self.rng)


class OrchestratorService:
    def __init__(
        self,
        settings: Settings,
        *,
        reporter: Reporter | None = None,
        context_factory: Callable[[Settings], CampaignContext] = build_context,
        measure: Callable[..., Any] = run_measurement,
        clock: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        home: Path | None = None,
    ) -> None:
        self.settings = settings
        self.reporter = reporter or build_reporter(settings)
        self.context_factory = context_factory
        self.measure = measure
        self.clock = clock
        self.home = home
        self.schedule = ScheduleClock(
            settings.schedule,
            clock(),
            slip=settings.slip,
            rng=rng,
            run_on_start=settings.run_on_start,
        )
        self.metrics = ServiceMetrics(self.reporter.spool.depth)
        self.metrics.next_campaign.set(self.schedule.next_at.timestamp())
        self.campaign: Campaign | None = None  # the current or last one
        self.metrics.watch_campaign(self._journal)
        self.current: str | None = None
        self.stopping = False
        self.last_result: CampaignResult | None = None
        self._last_poll: datetime | None = None

    # -- health ----------------------------------------------------------------------------

    def health(self) -> tuple[bool, dict[str, Any]]:
        return not self.stopping, {
            "campaign": self.current,
            "next_campaign": self.schedule.next_at.isoformat(),
            "spool_depth": self.reporter.spool.depth(),
            "last_report_error": self.reporter.last_error,
        }

    def _journal(self) -> dict[str, Any]:
        journal = self.campaign.journal if self.campaign is not None else None
        return journal.data if journal is not None else {}

    def cycle_settings(self, trigger: str, now: datetime) -> dict[str, Any]:
        """A scheduled campaign's cycle (the cron's next two firings) and deadline (the next
        firing: measurements not begun by then are missed); others have neither."""
        if trigger != "schedule":
            return {}
        expression = self.settings.schedule
        return {
            "cycle": cycle_seconds(expression, now),
            "slip": self.settings.slip,
            "cycle_fit": self.settings.cycle_fit,
            "deadline": next_firing(expression, now),
        }

    def serve_metrics(self) -> MetricsServer:
        return MetricsServer(
            self.metrics, self.health, self.settings.metrics_bind, self.settings.metrics_port
        ).start()

    # -- the loop --------------------------------------------------------------------------

    def run(self, once: bool = False, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        try:
            with campaign_lock(self.home):
                self._recover()
        except UserError as exc:  # a `campaign run` is going on: its journal is not stale
            log.info("%s; crash recovery waits for the next campaign", exc)
        self.reporter.start()
        try:
            while not stop.is_set():
                self.tick(stop)
                if once:
                    break
                stop.wait(self._sleep_seconds())
        finally:
            self.stopping = True
            self.reporter.close(flush_timeout=5.0)

    def _recover(self) -> None:
        """Under the campaign lock: a journal still "running" belongs to a dead process."""
        for uuid in recover_interrupted(self.reporter, self.home):
            log.warning("campaign %s was interrupted (orchestrator killed); marked so", uuid)

    def tick(self, stop: threading.Event) -> CampaignResult | None:
        """One decision: run a requested campaign, else a due scheduled one, else nothing."""
        now = self.clock()
        requested = self._pending_campaigns(now)
        if requested:
            return self._run(stop, trigger="manual", campaign_uuid=requested[0])
        if self.schedule.due(now):
            return self._run(stop, trigger="schedule")
        return None

    def _sleep_seconds(self) -> float:
        until_due = self.schedule.seconds_until_due(self.clock())
        if self.settings.report_to:
            return min(until_due, self.settings.poll_interval)
        return min(until_due, 3600.0)

    def _pending_campaigns(self, now: datetime) -> list[str]:
        """Ask the webapp for "run now" campaigns (at most every poll_interval)."""
        if not self.settings.report_to:
            return []
        if self._last_poll and (now - self._last_poll).total_seconds() < self._poll_floor():
            return []
        self._last_poll = now
        try:
            answer = self.reporter.api_get("/api/v1/campaigns/", {"state": "pending"})
        except Exception as exc:  # the webapp away: the schedule still runs
            log.info("cannot poll the webapp for pending campaigns: %s", exc)
            return []
        rows = answer.get("results", []) if isinstance(answer, dict) else answer
        pending = [
            r for r in rows if isinstance(r, dict) and r.get("state", "pending") == "pending"
        ]
        pending.sort(key=lambda r: str(r.get("created", "")))
        return [str(r["uuid"]) for r in pending if r.get("uuid")]

    def _poll_floor(self) -> float:
        return max(0.0, self.settings.poll_interval - 0.5)

    def _run(
        self, stop: threading.Event, *, trigger: str, campaign_uuid: str | None = None
    ) -> CampaignResult | None:
        settings = self.settings
        result: CampaignResult | None = None
        campaign_uuid = campaign_uuid or str(uuidlib.uuid4())
        cycle = self.cycle_settings(trigger, self.clock())
        self.current = campaign_uuid
        self.metrics.campaign_running.set(1)
        try:
            with campaign_lock(self.home):
                self._recover()
                try:
                    context = self.context_factory(settings)
                except UserError as exc:
                    log.error("cannot start a campaign: %s", exc)
                    self.metrics.campaigns.labels("failed", trigger).inc()
                    now = iso(self.clock())
                    # Said to the webapp too, or a "run now" request would be retried forever.
                    self.reporter.report_campaign(
                        campaign_uuid,
                        {"state": "failed", "trigger": trigger, "started": now, "finished": now},
                    )
                    return None
                log.info("campaign (%s) starting", trigger)
                campaign = Campaign(
                    context.campaign_settings(
                        settings,
                        stop_grace=settings.stop_grace,
                        trigger=trigger,
                        schedule_expr=settings.schedule if trigger == "schedule" else "",
                        **cycle,
                    ),
                    discovery=context.discovery,
                    reporter=self.reporter,
                    measure=self.measure,
                    creds=context.creds,
                    home=self.home,
                    progress=self._progress,
                    uuid=campaign_uuid,
                    clock=self.clock,
                )
                self.campaign = campaign
                result = campaign.run(stop)
        except UserError as exc:  # the lock: someone ran `campaign run` meanwhile
            log.warning("%s; skipping this campaign", exc)
        finally:
            self.current = None
            self.metrics.campaign_running.set(0)
            self.schedule.campaign_ended(self.clock())
            if cycle.get("deadline") is not None and self.clock() >= cycle["deadline"]:
                # its last measurements ended after the next slot: that slot's campaign
                # (the rotation's next part) starts now, late, rather than not at all
                self.schedule.next_at = self.clock()
            self.metrics.next_campaign.set(self.schedule.next_at.timestamp())
        if result is not None:
            self.last_result = result
            self.metrics.campaigns.labels(result.state, trigger).inc()
            if result.state == "finished":
                self.metrics.last_success.set(self.clock().timestamp())
            log.info(
                "campaign %s %s: %d ok, %d failed of %d",
                result.uuid,
                result.state,
                result.ok,
                result.failed,
                result.total,
            )
        return result

    def _progress(self, update: CampaignProgress) -> None:
        if update.last is not None:
            ok = update.last["failed"] == 0 and update.last["succeeded"] > 0
            self.metrics.measurements.labels("ok" if ok else "failed").inc()

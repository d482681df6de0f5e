"""Reads of campaigns: the latest one (what the grids' window 'latest' is), the running and
pending ones, and the grid page's "Campaigns" box: what runs, what was asked for, what
finished last.

The box is one query, whatever the number of nodes or campaigns: the three campaigns are
chosen by subqueries and their measurement counts are correlated subqueries. Who asked for a
pending campaign is the admin log entry of the dashboard's "run now"
(services.campaigns.campaign_run_now); a campaign asked for through the API has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.admin.models import ADDITION, LogEntry
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Cast, Coalesce

from webapp.results.choices import CAMPAIGN_COUNTERS as COUNTERS
from webapp.results.choices import CampaignState
from webapp.results.compiled_sql import compiled_query
from webapp.results.models import Campaign, Measurement
from webapp.results.related_counts import count_related

FINAL_STATES = (CampaignState.FINISHED, CampaignState.FAILED, CampaignState.INTERRUPTED)


def _latest_campaign_candidates() -> tuple[QuerySet, QuerySet]:
    """Finished campaigns, latest first; and campaigns with results, latest first."""
    finished = Campaign.objects.filter(state=CampaignState.FINISHED).order_by(
        F("finished").desc(nulls_last=True), "-id"
    )
    with_results = Campaign.objects.filter(
        Exists(Measurement.objects.filter(campaign_id=OuterRef("pk")))
    ).order_by(F("started").desc(nulls_last=True), "-id")
    return finished, with_results


@dataclass(frozen=True)
class CampaignStart:
    """What the grid page shows of the latest campaign (kept with the grids it computes)."""

    started: datetime | None


def latest_campaign() -> Campaign | None:
    """The latest finished campaign; before any has finished, the latest one with results."""
    finished, with_results = _latest_campaign_candidates()
    return finished.first() or with_results.first()


@compiled_query
def _latest_finished() -> QuerySet:
    return _latest_campaign_candidates()[0].values_list("pk", "started")[:1]


@compiled_query
def _latest_with_results() -> QuerySet:
    return _latest_campaign_candidates()[1].values_list("pk", "started")[:1]


def latest_campaign_start() -> tuple[int, datetime | None] | None:
    """latest_campaign()'s id and start (one query while some campaign has finished)."""
    found = _latest_finished() or _latest_with_results()
    return found[0] if found else None


def latest_campaign_id() -> int | None:
    """latest_campaign()'s id."""
    found = latest_campaign_start()
    return found[0] if found else None


@dataclass(frozen=True)
class Counters:
    """A campaign's counters as the orchestrator sent them (None: not said) and how it
    fitted its cycle (cycle_fit: mode, k, part), in words."""

    planned: int | None
    done: int | None
    failed: int | None
    missed: int | None
    late: int | None
    fit: str

    @property
    def known(self) -> bool:
        return any(getattr(self, name) is not None for name in COUNTERS) or bool(self.fit)

    @property
    def items(self) -> list[tuple[str, int]]:
        return [(n, getattr(self, n)) for n in COUNTERS if getattr(self, n) is not None]


def fit_text(fit: Any) -> str:
    """cycle_fit -> 'rotate: part 1 of 2 (k = 2, no fewer than 2 can fit)', 'shorten: left
    out streams 1', 'fits', ... ('' when not said)."""
    if not isinstance(fit, dict) or not fit.get("mode"):
        return ""
    mode = str(fit["mode"])
    k, k_min, part = fit.get("k"), fit.get("k_min"), fit.get("part")
    text = mode
    if isinstance(k, int) and k > 1:
        text += f": part {part} of {k}" if isinstance(part, int) else f": k = {k}"
        text += f" (k = {k}" + (f", no fewer than {k_min} can fit)" if k_min else ")")
    dropped = fit.get("dropped")
    if isinstance(dropped, dict) and dropped:
        left = "; ".join(f"{key} {', '.join(map(str, v))}" for key, v in dropped.items())
        text += f", left out {left}"
    return text


@dataclass(frozen=True)
class CampaignLine:
    """One campaign as the box shows it."""

    uuid: str
    state: str
    trigger: str
    created: datetime
    started: datetime | None
    finished: datetime | None
    landed: int  # measurements stored so far
    ok: int  # measurements whose every transfer succeeded
    requested_by: str | None  # username of the dashboard user who asked, if any
    counted: Counters  # what the orchestrator counted (issue 24)

    @property
    def failed(self) -> int:
        return self.landed - self.ok


@dataclass(frozen=True)
class CampaignStatus:
    running: CampaignLine | None
    pending: CampaignLine | None  # the oldest: the one the orchestrator takes next
    pending_count: int
    last: CampaignLine | None  # the latest campaign that finished (or failed, or was interrupted)

    @property
    def busy(self) -> CampaignLine | None:
        """The campaign that makes another "run now" request pointless, if any."""
        return self.pending or self.running


def _pk(queryset: QuerySet) -> Subquery:
    return Subquery(queryset.values("pk")[:1])


def running_campaign() -> QuerySet:
    return Campaign.objects.filter(state=CampaignState.RUNNING).order_by(
        F("started").desc(nulls_last=True), "-id"
    )


def pending_campaigns() -> QuerySet:
    return Campaign.objects.filter(state=CampaignState.PENDING).order_by("created", "id")


@compiled_query
def _status_rows() -> QuerySet:
    """The running, the next pending and the last finished campaign, as values. Compiled
    once per process: its subqueries cost Django more to build on every page than the
    database to run (3 ms against 1)."""
    last = Campaign.objects.filter(state__in=FINAL_STATES, finished__isnull=False).order_by(
        "-finished", "-id"
    )
    pending_count = (
        Campaign.objects.filter(state=CampaignState.PENDING)
        .order_by()
        .values("state")
        .annotate(n=Count("*"))
        .values("n")
    )
    requester = (
        LogEntry.objects.filter(
            content_type__app_label=Campaign._meta.app_label,
            content_type__model=Campaign._meta.model_name,
            object_id=Cast(OuterRef("pk"), output_field=LogEntry._meta.get_field("object_id")),
            action_flag=ADDITION,
        )
        .order_by("action_time")
        .values("user__username")[:1]
    )
    rows = (
        Campaign.objects.filter(
            Q(pk=_pk(running_campaign())) | Q(pk=_pk(pending_campaigns())) | Q(pk=_pk(last))
        )
        .order_by()
        .annotate(
            landed=count_related(Measurement, "campaign"),
            ok=count_related(Measurement, "campaign", failed=0, succeeded__gt=0),
            requested_by=Subquery(requester),
            pending_count=Coalesce(Subquery(pending_count, output_field=IntegerField()), 0),
            **{f"counted_{name}": F(name) for name in COUNTERS},
        )
        .values(
            "uuid",
            "state",
            "trigger",
            "created",
            "started",
            "finished",
            "landed",
            "ok",
            "requested_by",
            "pending_count",
            *(f"counted_{name}" for name in COUNTERS),
            "cycle_fit",
        )
    )
    return rows


def campaign_status() -> CampaignStatus:
    """The running, the next pending and the last finished campaign, in one query."""
    found: dict[str, CampaignLine] = {}
    pending_total = 0
    for row in _status_rows():
        pending_total = row.pop("pending_count")
        counted = Counters(
            **{name: row.pop(f"counted_{name}") for name in COUNTERS},
            fit=fit_text(row.pop("cycle_fit")),
        )
        line = CampaignLine(**{**row, "uuid": str(row["uuid"]), "counted": counted})
        # At most one row per state group: the subqueries pick one campaign each.
        found["last" if line.state in FINAL_STATES else line.state] = line
    return CampaignStatus(
        running=found.get(CampaignState.RUNNING),
        pending=found.get(CampaignState.PENDING),
        pending_count=pending_total,
        last=found.get("last"),
    )

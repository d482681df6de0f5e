"""The grid page's "Campaigns" box: what runs, what was asked for, what finished last.

One query, whatever the number of nodes or campaigns: the three campaigns are chosen by
subqueries and their measurement counts are correlated subqueries. Who asked for a pending
campaign is the admin log entry the "run now" view writes (dashboard.run_now); a campaign
asked for through the API has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.admin.models import ADDITION, LogEntry
from django.db.models import Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Cast, Coalesce

from webapp.results.choices import CampaignState
from webapp.results.models import Campaign, Measurement
from webapp.results.orm_rows import compiled_query

FINAL_STATES = (CampaignState.FINISHED, CampaignState.FAILED, CampaignState.INTERRUPTED)


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


def _measurements(**filters) -> Coalesce:
    counted = (
        Measurement.objects.filter(campaign=OuterRef("pk"), **filters)
        .order_by()
        .values("campaign")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


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
            landed=_measurements(),
            ok=_measurements(failed=0, succeeded__gt=0),
            requested_by=Subquery(requester),
            pending_count=Coalesce(Subquery(pending_count, output_field=IntegerField()), 0),
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
        )
    )
    return rows


def campaign_status() -> CampaignStatus:
    """The running, the next pending and the last finished campaign, in one query."""
    found: dict[str, CampaignLine] = {}
    pending_total = 0
    for row in _status_rows():
        pending_total = row.pop("pending_count")
        line = CampaignLine(**{**row, "uuid": str(row["uuid"])})
        # At most one row per state group: the subqueries pick one campaign each.
        found["last" if line.state in FINAL_STATES else line.state] = line
    return CampaignStatus(
        running=found.get(CampaignState.RUNNING),
        pending=found.get(CampaignState.PENDING),
        pending_count=pending_total,
        last=found.get("last"),
    )

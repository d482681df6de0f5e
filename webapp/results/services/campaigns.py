"""Writes of campaigns: made on first sight by a measurement or a baseline, requested ("run
now", through the API or the dashboard) and updated with the orchestrator's progress."""

import uuid as uuid_lib
from datetime import datetime

from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone

from webapp.results.cache import lock_data_version
from webapp.results.choices import CampaignState, Trigger
from webapp.results.models import Campaign
from webapp.results.selectors.campaigns import pending_campaigns, running_campaign


def campaigns_ensure(*, first_seen: dict[uuid_lib.UUID, datetime]) -> dict[uuid_lib.UUID, Campaign]:
    """Campaigns by uuid; a uuid seen for the first time becomes a running 'cli' campaign."""
    if not first_seen:
        return {}
    known = {c.uuid: c for c in Campaign.objects.filter(uuid__in=first_seen)}
    missing = [
        Campaign(uuid=u, trigger=Trigger.CLI, state=CampaignState.RUNNING, started=started)
        for u, started in first_seen.items()
        if u not in known
    ]
    if missing:
        Campaign.objects.bulk_create(missing, ignore_conflicts=True)
        known = {c.uuid: c for c in Campaign.objects.filter(uuid__in=first_seen)}
    return known


def campaign_request(*, schedule: str = "", trigger: str = Trigger.MANUAL) -> Campaign:
    """A pending campaign: the 'run now' request the orchestrator polls for."""
    return Campaign.objects.create(trigger=trigger, schedule=schedule, state=CampaignState.PENDING)


def campaign_update(
    *,
    campaign: Campaign,
    state: str | None = None,
    started: datetime | None = None,
    finished: datetime | None = None,
    schedule: str | None = None,
    trigger: str | None = None,
    rtt_checks: list[dict] | None = None,
    **counted: int | dict,
) -> Campaign:
    """Orchestrator progress: state and times (a finished campaign gets a finish time), and
    the RTT check made before measuring."""
    fields = []
    for name, value in (
        ("state", state),
        ("started", started),
        ("finished", finished),
        ("schedule", schedule),
        ("trigger", trigger),
        ("rtt_checks", rtt_checks),
        *counted.items(),  # planned .. late, cycle_fit: as the orchestrator counted them
    ):
        if value is not None:
            setattr(campaign, name, value)
            fields.append(name)
    now = timezone.now()
    if state == CampaignState.RUNNING and campaign.started is None:
        campaign.started = now
        fields.append("started")
    if (
        state in {CampaignState.FINISHED, CampaignState.FAILED, CampaignState.INTERRUPTED}
        and campaign.finished is None
    ):
        campaign.finished = max(now, campaign.started or now)
        fields.append("finished")
    if fields:
        campaign.save(update_fields=sorted(set(fields)))
    return campaign


def campaign_run_now(*, user: AbstractBaseUser) -> tuple[Campaign, bool]:
    """The dashboard's "run now": the pending or running campaign if there is one (False),
    else a new pending one (True), `user` kept as its admin log entry (who asked)."""
    with transaction.atomic():
        # Presses take turns (a row lock, any database): two cannot both see "none pending".
        lock_data_version()
        busy = pending_campaigns().first() or running_campaign().first()
        if busy is not None:
            return busy, False
        campaign = campaign_request()
        LogEntry.objects.create(
            user_id=user.pk,
            content_type=ContentType.objects.get_for_model(Campaign),
            object_id=str(campaign.pk),
            object_repr=str(campaign)[:200],
            action_flag=ADDITION,
            change_message="Requested from the dashboard (run now).",
        )
        return campaign, True

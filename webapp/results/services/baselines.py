"""Writes of link baselines: idempotent by the client's uuid like measurements, a replay
answered 200 and a conflicting re-use 409."""

from django.db import IntegrityError, transaction

from webapp.results.cache import data_changed
from webapp.results.models import Baseline
from webapp.results.services.campaigns import campaigns_ensure
from webapp.results.services.nodes import nodes_ensure
from webapp.results.services.uuid_conflicts import Stored, UuidConflict, same_or_conflict

BASELINE_FIELDS = (
    "tool",
    "streams",
    "duration_s",
    "omit_s",
    "started",
    "finished",
    "throughput_gbps",
    "retransmits",
    "error",
)


def _baseline_content(b: Baseline) -> tuple:
    campaign = b.campaign.uuid if b.campaign_id else None
    return (campaign, b.src.name, b.dst.name, *(getattr(b, f) for f in BASELINE_FIELDS))


def baseline_ingest(*, payload: dict) -> Stored:
    """Store one validated baseline; its nodes and campaign are made on first sight."""
    incoming = (
        payload["campaign"],
        payload["src"],
        payload["dst"],
        *(payload[f] for f in BASELINE_FIELDS),
    )
    for _ in range(2):  # a concurrent insert of the same uuid: read it back and compare
        existing = Baseline.objects.select_related("src", "dst", "campaign").filter(
            uuid=payload["uuid"]
        )
        if (found := existing.first()) is not None:
            same_or_conflict("baseline", payload["uuid"], _baseline_content(found), incoming)
            return Stored(found, False)
        nodes = nodes_ensure(names=[payload["src"], payload["dst"]])
        campaign = payload["campaign"]
        campaigns = campaigns_ensure(first_seen={campaign: payload["started"]} if campaign else {})
        try:
            with transaction.atomic():
                baseline = Baseline.objects.create(
                    uuid=payload["uuid"],
                    campaign=campaigns.get(campaign) if campaign else None,
                    src=nodes[payload["src"]],
                    dst=nodes[payload["dst"]],
                    **{f: payload[f] for f in BASELINE_FIELDS},
                )
        except IntegrityError:
            continue
        data_changed()
        return Stored(baseline, True)
    raise UuidConflict(f"baseline {payload['uuid']} could not be stored; try again")

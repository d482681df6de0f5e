"""Writes of redirector lookups: idempotent by the client's uuid like measurements (201 new,
200 the same again, 409 other content under a stored uuid). hops and seconds are derived
here from the steps, never taken from the client:
  hops    = len(steps) - 1               (the redirects followed)
  seconds = sum of the steps' seconds    (success; null when the lookup failed)
"""

from django.db import IntegrityError, transaction

from webapp.results.choices import Outcome
from webapp.results.models import Lookup
from webapp.results.models.lookups import LOOKUP_FIELDS
from webapp.results.services.campaigns import campaigns_ensure
from webapp.results.services.uuid_conflicts import Stored, UuidConflict, same_or_conflict


def derived(payload: dict) -> dict:
    """The stored fields of a validated payload, hops and seconds computed."""
    steps = [{"server": s["server"], "seconds": s["seconds"]} for s in payload["steps"]]
    ok = payload["outcome"] == Outcome.SUCCESS
    return {
        **{f: payload.get(f) for f in LOOKUP_FIELDS},
        "steps": steps,
        "hops": len(steps) - 1,
        "seconds": sum(s["seconds"] for s in steps) if ok else None,
        "message": payload.get("message") or "",
    }


def _content(campaign, fields: dict) -> tuple:
    return (campaign, *(fields[f] for f in LOOKUP_FIELDS))


def lookup_ingest(*, payload: dict) -> Stored:
    """Store one validated lookup; its campaign is made on first sight (as a measurement's)."""
    fields = derived(payload)
    incoming = _content(payload.get("campaign"), fields)
    for _ in range(2):  # a concurrent insert of the same uuid: read it back and compare
        found = Lookup.objects.select_related("campaign").filter(uuid=payload["uuid"]).first()
        if found is not None:
            stored = {f: getattr(found, f) for f in LOOKUP_FIELDS}
            campaign = found.campaign.uuid if found.campaign_id else None
            same_or_conflict("lookup", payload["uuid"], _content(campaign, stored), incoming)
            return Stored(found, False)
        campaign = payload.get("campaign")
        campaigns = campaigns_ensure(first_seen={campaign: payload["started"]} if campaign else {})
        try:
            with transaction.atomic():
                lookup = Lookup.objects.create(
                    uuid=payload["uuid"],
                    campaign=campaigns.get(campaign) if campaign else None,
                    **fields,
                )  # its post_save bumps the data version (results.cache)
        except IntegrityError:
            continue
        return Stored(lookup, True)
    raise UuidConflict(f"lookup {payload['uuid']} could not be stored; try again")

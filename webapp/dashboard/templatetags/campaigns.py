"""{% campaign_status as status %}: the Campaigns box's data without touching the views;
{% campaign_counters status as counters %}: what the orchestrator counted of the box's
campaigns (issue 24)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import template

from webapp.results.models import Campaign
from webapp.results.selectors.campaigns import CampaignStatus, campaign_status

register = template.Library()

COUNTERS = ("planned", "done", "failed", "missed", "late")


@register.simple_tag(name="campaign_status")
def campaign_status_tag() -> CampaignStatus:
    return campaign_status()


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


@register.simple_tag(name="campaign_counters")
def campaign_counters_tag(status: CampaignStatus) -> dict[str, Counters]:
    """uuid -> Counters of the running and the last campaign of `status` (one query)."""
    lines = [line for line in (status.running, status.last) if line is not None]
    if not lines:
        return {}
    rows = Campaign.objects.filter(uuid__in=[line.uuid for line in lines]).values(
        "uuid", *COUNTERS, "cycle_fit"
    )
    return {
        str(row["uuid"]): Counters(
            **{name: row[name] for name in COUNTERS}, fit=fit_text(row["cycle_fit"])
        )
        for row in rows
    }


@register.filter(name="counters_of")
def counters_of(found: dict[str, Counters], uuid: str) -> Counters | None:
    return found.get(uuid) if found else None

"""{% campaign_status as status %}: the Campaigns box's data (with what the orchestrator
counted of each campaign: line.counted) without touching the views."""

from __future__ import annotations

from django import template

from webapp.results.selectors.campaigns import CampaignStatus, campaign_status

register = template.Library()


@register.simple_tag(name="campaign_status")
def campaign_status_tag() -> CampaignStatus:
    return campaign_status()

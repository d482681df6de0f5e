"""The campaign counters on the page (issue 24): planned, done, failed, missed and late as
the orchestrator counted them, and how the campaign fitted its cycle."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from webapp.results.models import Campaign
from webapp.results.selectors.campaigns import fit_text

pytestmark = pytest.mark.django_db


def _counters(html: str, line: str) -> dict[str, str]:
    part = html.split(f'class="{line}"', 1)[1].split("</li>", 1)[0]
    return dict(re.findall(r'data-counter="(\w+)">([^<]*)<', part))


def test_the_last_and_the_running_campaign_show_their_counters(client):
    now = timezone.now()
    Campaign.objects.create(
        state="finished", started=now, finished=now, planned=120, done=100, failed=5,
        missed=10, late=5,
        cycle_fit={"mode": "rotate", "k": 2, "k_min": 2, "part": 1, "cycle_seconds": 43200},
    )  # fmt: skip
    Campaign.objects.create(state="running", started=now, planned=7, done=0, failed=0,
                            missed=0, late=0)  # fmt: skip
    html = client.get("/").content.decode()
    assert _counters(html, "campaign-last") == {
        "planned": "120 planned",
        "done": "100 done",
        "failed": "5 failed",
        "missed": "10 missed",
        "late": "5 late",
        "cycle_fit": "cycle: rotate: part 1 of 2 (k = 2, no fewer than 2 can fit)",
    }
    assert _counters(html, "campaign-running")["planned"] == "7 planned"


def test_a_campaign_without_counters_shows_none(client):
    now = timezone.now()
    Campaign.objects.create(state="finished", started=now, finished=now)
    html = client.get("/").content.decode()
    assert "campaign-last" in html and "data-campaign-counters" not in html


def test_fit_texts():
    assert fit_text(None) == "" and fit_text({"mode": "fits", "k": 1}) == "fits"
    shortened = {"mode": "shorten", "k": 1, "dropped": {"streams": [1]}}
    assert fit_text(shortened) == "shorten, left out streams 1"

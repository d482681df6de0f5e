"""Each pair's age (issue 24): a cell whose latest measurement is older than 1.5 normal
periods (the cycle x k of the newest campaign's cycle_fit; 12 h x 1 without one) is marked
overdue, in the full table and the compact one; the pair page says its latest's age."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.webapp_pages import bulk_measurement, bulk_mesh, compact_tables
from webapp.results.grid.ages import (
    DEFAULT_CYCLE_SECONDS,
    format_age,
    lookback_seconds,
    normal_period,
)
from webapp.results.models import Campaign

pytestmark = pytest.mark.django_db

ROTATION = {"mode": "rotate", "cycle_seconds": 3600.0, "k": 4, "k_min": 3, "part": 2}


def test_the_normal_period_is_the_newest_cycle_fit_else_the_default():
    assert normal_period().seconds == DEFAULT_CYCLE_SECONDS and not normal_period().known
    Campaign.objects.create(cycle_fit=ROTATION)
    Campaign.objects.create(cycle_fit={"mode": "fits", "cycle_seconds": None, "k": 1})
    period = normal_period()  # a campaign run by hand has no cycle: the newest with one
    assert (period.cycle_seconds, period.k, period.overdue_after) == (3600.0, 4, 6 * 3600)
    assert period.describe() == "every 4.0 h (4 cycles of 1.0 h)"
    assert lookback_seconds(period) == 86400  # at least a day
    assert format_age(90) == "2 min" and format_age(3 * 86400) == "3.0 d"


def _cells(html: str) -> dict[tuple[str, str], dict]:
    table = next(iter(compact_tables(html).values()))
    columns = table["columns"]
    return {
        (row["name"], columns[i]): cell
        for row in table["rows"]
        for i, cell in enumerate(row["cells"])
    }


def test_an_overdue_pair_is_marked_in_the_compact_grid(client):
    # 4 sites x 8 nodes (compact), a rotation of 4 one-hour cycles: overdue after 6 h.
    # a-01 -> b-01 not in the latest campaign: measured 10 h ago (overdue);
    # a-02 -> b-02 neither: 2 h ago (its age is told, not overdue).
    names = ("ucsd-01", "unl-01"), ("ucsd-02", "unl-02")
    bulk_mesh(sites=4, per_site=8, skip=names, cycle_fit=ROTATION)
    bulk_measurement(*names[0], ago=timedelta(hours=10))
    bulk_measurement(*names[1], ago=timedelta(hours=2))
    html = client.get("/?scope=host").content.decode()
    cells = _cells(html)
    old, recent = cells[names[0]], cells[names[1]]
    assert "o" in old["classes"] and old["data-age"] == "10.0 h"
    assert "o" not in recent["classes"] and recent["data-age"] == "2.0 h"
    assert "n" in old["classes"]  # not run in the latest campaign
    fresh = cells["ucsd-01", "unl-02"]
    assert "o" not in fresh["classes"] and "data-age" not in fresh
    assert "1 pair overdue" in html and "every 4.0 h (4 cycles of 1.0 h)" in html


def test_an_overdue_pair_is_marked_in_the_full_grid_and_its_page(client, store):
    # Two nodes, no cycle_fit: the default 12 h cycle, overdue after 18 h.
    store(src="n1", dst="n2", protocol="https", streams=8, gbps=30.0,
          started=_ago(hours=30))  # fmt: skip
    store(src="n2", dst="n1", protocol="https", streams=8, gbps=30.0,
          started=_ago(hours=1))  # fmt: skip
    html = client.get("/?window=7d").content.decode()
    assert html.count('class="old" data-age="30.0 h"') == 1
    assert "n1 to n2: 8 streams 30.00 Gbps OK; last measured 30.0 h ago, overdue" in html
    assert 'n2 to n1: 8 streams 30.00 Gbps OK"' in html  # in time: nothing added
    page = client.get("/pairs/n1/n2/").content.decode()
    assert 'class="last-measured overdue" data-overdue="true"' in page
    assert "30.0 h ago</strong>: overdue (older than 1.5 \u00d7 every 12.0 h" in page
    other = client.get("/pairs/n2/n1/").content.decode()
    assert 'data-overdue="false"' in other and "60 min ago" in other


def _ago(**kwargs):
    from django.utils import timezone

    return timezone.now() - timedelta(**kwargs)

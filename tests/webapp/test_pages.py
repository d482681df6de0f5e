"""The grid page through Django's test client, on PostgreSQL, with known data."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.webapp_pages import NODES, cell, grid_tables, store_mesh

pytestmark = pytest.mark.django_db


@pytest.fixture
def mesh(store) -> dict:
    """Three nodes, one campaign, known values (pages_support.store_mesh)."""
    return store_mesh(store)


def test_empty_database_says_what_to_do(client):
    for url in ("/", "/plots/latency/", "/plots/streams/"):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "No measurements yet." in html, url
        assert "make demo" in html and "tpcbench campaign run --report-to URL" in html, url
        assert 'class="grid"' not in html


def test_grid_has_a_cell_per_pair_and_a_band_per_check(client, mesh):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    tables = grid_tables(html)
    assert set(tables) == {"https", "gridftp"}
    https = tables["https"]
    assert https["columns"] == list(NODES)
    assert [r["name"] for r in https["rows"]] == list(NODES)
    for i, row in enumerate(https["rows"]):
        assert len(row["cells"]) == len(NODES)
        assert row["cells"][i] == "self"
        for j, c in enumerate(row["cells"]):
            if i != j:
                assert [b["tip"].split("\n")[0] for b in c["bands"]] == ["8 streams", "1 stream"]
    https_section = html[html.index('id="section-https"') : html.index('id="section-gridftp"')]
    stats = re.sub(r"<[^>]+>", "", re.search(r'<p class="stats">(.*?)</p>', https_section).group(1))
    assert stats == "Checks: 4 OK · 6 WARNING · 2 CRITICAL"
    assert 'aria-label="Legend for HTTPS' in html
    assert "Throughput &gt;= 30 Gbps" in html
    assert "Last updated" in html
    assert 'href="/api/docs/"' in html and 'href="/plots/latency/"' in html


def test_cell_status_value_and_link(client, mesh):
    tables = grid_tables(client.get("/").content.decode())
    ab = cell(tables, "https", "alpha", "bravo")
    assert ab["href"] == "/pairs/alpha/bravo/"
    eight, one = ab["bands"]
    assert eight["status"] == 0 and "s0" in eight["classes"]
    assert eight["tip"].split("\n")[1] == "42.00 Gbps"
    assert eight["tip"].split("\n")[3] == "3/3 succeeded"
    assert one["status"] == 1 and "12.00 Gbps" in one["tip"]
    assert "42.00 Gbps" in ab["label"] and "alpha to bravo" in ab["label"]
    assert cell(tables, "https", "charlie", "alpha")["bands"][0]["status"] == 2
    # A pair with no gridftp result in the window: NOT RUN bands, not an error.
    assert [b["status"] for b in cell(tables, "gridftp", "bravo", "alpha")["bands"]] == [4]


def test_failed_cell_is_marked_and_explains_why(client, mesh):
    tables = grid_tables(client.get("/").content.decode())
    failed = cell(tables, "https", "bravo", "alpha")["bands"][0]
    assert failed["status"] == 2
    assert {"failed", "allfailed"} <= set(failed["classes"])
    tip = failed["tip"].split("\n")
    assert tip[3] == "0/3 succeeded"
    assert "timeout" in tip[5] and "timeout talking to alpha" in tip[5]
    healthy = cell(tables, "https", "alpha", "bravo")["bands"][0]
    assert "failed" not in healthy["classes"]


def test_window_selector(client, mesh, store):
    # An older measurement: inside 20 d, outside 7 d and outside the latest campaign.
    older = timezone.now() - timedelta(days=10)
    store(src="bravo", dst="charlie", protocol="gridftp", streams=8, gbps=33.0, started=older)
    latest = grid_tables(client.get("/").content.decode())
    assert cell(latest, "gridftp", "bravo", "charlie")["bands"][0]["status"] == 4
    week = client.get("/?window=7d")
    assert week.status_code == 200
    assert re.search(r'<a href="\?window=7d" aria-current="true"', week.content.decode())
    assert (
        cell(grid_tables(week.content.decode()), "gridftp", "bravo", "charlie")["bands"][0][
            "status"
        ]
        == 4
    )
    month_html = client.get("/?window=20D").content.decode()
    assert re.search(r'<a href="\?window=20d" aria-current="true"', month_html)
    month = grid_tables(month_html)
    assert "33.00 Gbps" in cell(month, "gridftp", "bravo", "charlie")["bands"][0]["tip"]


def test_bad_window_is_a_400_that_says_why(client, mesh):
    response = client.get("/?window=fortnight")
    assert response.status_code == 400
    assert "invalid window" in response.content.decode()


def test_grid_queries_do_not_grow_with_nodes(client, mesh, store):
    def count() -> tuple[int, int]:
        """Queries of the page computed afresh, then as served from the aggregate cache."""
        cache.clear()
        found = []
        for _ in range(2):
            with CaptureQueriesContext(connection) as queries:
                assert client.get("/").status_code == 200
            found.append(len(queries))
        return found[0], found[1]

    before = count()
    started = timezone.now() - timedelta(hours=2)
    for src, dst in (("delta", "echo"), ("echo", "foxtrot"), ("foxtrot", "alpha")):
        store(
            src=src,
            dst=dst,
            protocol="https",
            streams=8,
            gbps=30.0,
            started=started,
            campaign=mesh["campaign"],
        )
    assert len(grid_tables(client.get("/").content.decode())["https"]["rows"]) == 6
    assert count() == before
    assert before[1] < before[0]  # the cache saves the aggregate queries

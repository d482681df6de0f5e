"""The dashboard pages through Django's test client, on PostgreSQL, with known data."""

from __future__ import annotations

import json
import re
import uuid as uuid_lib
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from webapp.dashboard.history import RECENT_MEASUREMENTS

pytestmark = pytest.mark.django_db

NODES = ("alpha", "bravo", "charlie")
GIB = 2**30


class GridTables(HTMLParser):
    """Collects every <table class="grid">: its column names and, per row, each cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict] = {}
        self._table: dict | None = None
        self._cell: list | None = None
        self._in_col = False
        self._in_row_head = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and "grid" in classes:
            self._table = {"columns": [], "rows": []}
            self.tables[a["data-grid"]] = self._table
        elif self._table is None:
            return
        elif tag == "th" and "col" in classes:
            self._in_col = True
        elif tag == "th" and "row" in classes:
            self._in_row_head = True
            self._table["rows"].append({"name": "", "cells": []})
        elif tag == "td" and "self" in classes:
            self._table["rows"][-1]["cells"].append("self")
        elif tag == "a" and "cell" in classes:
            self._cell = []
            self._table["rows"][-1]["cells"].append(
                {"href": a["href"], "label": a["aria-label"], "bands": self._cell}
            )
        elif tag == "span" and "band" in classes and self._cell is not None:
            self._cell.append(
                {"status": int(a["data-status"]), "classes": classes, "tip": a["data-tip"]}
            )

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag == "th":
            self._in_col = self._in_row_head = False
        elif tag == "a":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._table is None:
            return
        if self._in_col and data.strip():
            self._table["columns"].append(data.strip())
        elif self._in_row_head:
            self._table["rows"][-1]["name"] += data.strip()


def grid_tables(html: str) -> dict[str, dict]:
    parser = GridTables()
    parser.feed(html)
    return parser.tables


def cell(tables: dict, grid: str, src: str, dst: str) -> dict:
    table = tables[grid]
    row = next(r for r in table["rows"] if r["name"] == src)
    return row["cells"][table["columns"].index(dst)]


def figure(html: str, element_id: str) -> dict:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert match, f"no figure {element_id} in the page"
    return json.loads(match.group(1))


@pytest.fixture
def mesh(store) -> dict:
    """Three nodes, one campaign: every https pair at 8 and 1 streams, with known values.

    alpha->bravo 8 streams 42 Gbps (OK), 1 stream 12 Gbps (WARNING);
    bravo->alpha 8 streams: every transfer timed out (CRITICAL, failed);
    charlie->alpha 8 streams 5 Gbps (CRITICAL); gridftp only alpha->charlie 8 streams 20 Gbps.
    """
    campaign = uuid_lib.uuid4()
    now = timezone.now().replace(microsecond=0)
    started = now - timedelta(hours=1)
    values = {
        ("alpha", "bravo", 8): 42.0,
        ("alpha", "bravo", 1): 12.0,
        ("charlie", "alpha", 8): 5.0,
    }
    rtts = {
        ("alpha", "bravo"): 10.0,
        ("alpha", "charlie"): 40.0,
        ("bravo", "alpha"): 10.0,
        ("bravo", "charlie"): 60.0,
        ("charlie", "alpha"): 40.0,
        ("charlie", "bravo"): 60.0,
    }
    for src in NODES:
        for dst in NODES:
            if src == dst:
                continue
            for streams in (8, 1):
                failed = 3 if (src, dst, streams) == ("bravo", "alpha", 8) else 0
                gbps = values.get((src, dst, streams), 35.0 if streams == 8 else 15.0)
                store(
                    src=src,
                    dst=dst,
                    protocol="https",
                    streams=streams,
                    gbps=gbps,
                    started=started,
                    failed=failed,
                    campaign=campaign,
                    rtt_ms=rtts[(src, dst)],
                )
    store(
        src="alpha",
        dst="charlie",
        protocol="gridftp",
        streams=8,
        gbps=20.0,
        started=started,
        campaign=campaign,
        rtt_ms=40.0,
    )
    return {"campaign": campaign, "started": started}


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
    store(
        src="bravo",
        dst="charlie",
        protocol="gridftp",
        streams=8,
        gbps=33.0,
        started=timezone.now() - timedelta(days=10),
    )
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


def test_pair_page_plots_history_and_lists_transfers(client, mesh, store):
    store(
        src="bravo",
        dst="alpha",
        protocol="https",
        streams=8,
        gbps=25.0,
        rtt_ms=11.0,
        started=timezone.now() - timedelta(days=3),
    )
    response = client.get("/pairs/bravo/alpha/")
    assert response.status_code == 200
    html = response.content.decode()
    fig = figure(html, "history-figure")
    names = [t["name"] for t in fig["data"]]
    assert names == ["https, 8 streams", "https, 1 stream", "RTT (ms, right axis)"]
    eight = fig["data"][0]
    assert eight["y"] == [pytest.approx(25.0), None]  # the all-failed one has no throughput
    assert eight["marker"]["symbol"][1] == "x"
    assert fig["layout"]["yaxis2"]["overlaying"] == "y"
    assert 'id="history-plot"' in html and "vendor/plotly/plotly.min.js" in html
    assert "<td>timeout</td>" in html and "timeout talking to alpha" in html
    assert "/api/v1/measurements/?src=bravo&amp;dst=alpha" in html


def test_pair_page_plots_the_window_but_loads_transfers_of_listed_measurements_only(
    client, mesh, store
):
    now = timezone.now()
    for day in range(12):  # 12 measurements of one pair in the last 20 days
        store(
            src="delta",
            dst="echo",
            protocol="https",
            streams=8,
            gbps=10.0 + day,
            started=now - timedelta(days=day, hours=1),
        )
    with CaptureQueriesContext(connection) as queries:
        html = client.get("/pairs/delta/echo/").content.decode()
    # The plot has the whole window ...
    assert len(figure(html, "history-figure")["data"][0]["y"]) == 12
    # ... the transfer table the most recent measurements, newest first ...
    groups = re.findall(r'<th scope="rowgroup"[^>]*>[^·]*· [^·]*· ([^·]*) UTC', html)
    assert len(groups) == RECENT_MEASUREMENTS < 12
    assert groups == sorted(groups, reverse=True)
    # ... and only their transfers were read.
    transfer_reads = [q["sql"] for q in queries if 'FROM "results_transfer"' in q["sql"]]
    assert len(transfer_reads) == 1
    ids = re.search(r'"measurement_id" IN \(([^)]*)\)', transfer_reads[0]).group(1)
    assert len(ids.split(",")) == RECENT_MEASUREMENTS


def test_pair_page_for_unknown_node_is_a_404_that_says_so(client, mesh):
    response = client.get("/pairs/alpha/nowhere/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "No node named “nowhere”" in html
    assert "alpha" not in re.findall(r"No node named “([^”]*)”", html)


def test_pair_page_history_length(client, mesh, store):
    store(
        src="delta",
        dst="echo",
        protocol="https",
        streams=1,
        gbps=3.0,
        started=timezone.now() - timedelta(days=30),
    )
    week = client.get("/pairs/delta/echo/?days=7")
    assert week.status_code == 200
    html = week.content.decode()
    assert "No measurements of this pair in the last 7 days" in html
    assert "history-figure" not in html
    quarter = client.get("/pairs/delta/echo/?days=90").content.decode()
    assert figure(quarter, "history-figure")["data"][0]["y"] == [pytest.approx(3.0)]


def test_latency_page_scatter_and_fit(client, mesh):
    response = client.get("/plots/latency/?streams=8&window=20d")
    assert response.status_code == 200
    html = response.content.decode()
    fig = figure(html, "latency-figure")
    names = [t["name"] for t in fig["data"]]
    assert "https, 8 streams" in names and "gridftp, 8 streams" in names
    fit = next(t for t in fig["data"] if t["name"].startswith("https fit"))
    assert "slope" in fit["name"] and "r = " in fit["name"]
    https_points = next(t for t in fig["data"] if t["name"] == "https, 8 streams")
    assert len(https_points["x"]) == 5  # bravo->alpha failed: no throughput
    assert "/api/v1/throughput-vs-latency/?protocol=https&amp;streams=8&amp;window=20d" in html
    assert "/api/v1/measurements/?protocol=https&amp;format=csv&amp;streams=8" in html
    only = client.get("/plots/latency/?protocol=gridftp&streams=8")
    names = [t["name"] for t in figure(only.content.decode(), "latency-figure")["data"]]
    assert names == ["gridftp, 8 streams"]  # one pair: no line to fit
    other = client.get("/plots/latency/?streams=4").content.decode()
    assert '<option value="4" selected>' in other
    assert "No measurements with an RTT for these filters" in other


def test_streams_page_scatter_with_identity_line(client, mesh):
    response = client.get("/plots/streams/?protocol=https&window=7d")
    assert response.status_code == 200
    html = response.content.decode()
    fig = figure(html, "streams-figure")
    points = fig["data"][0]
    assert points["name"] == "https"
    # bravo->alpha has no 8-stream throughput, so 5 pairs have both settings.
    assert len(points["x"]) == 5
    ab = points["text"].index(next(t for t in points["text"] if t.startswith("alpha → bravo")))
    assert (points["x"][ab], points["y"][ab]) == (pytest.approx(12.0), pytest.approx(42.0))
    assert fig["data"][-1]["name"].startswith("y = x")
    assert "/api/v1/stream-comparison/?protocol=https&amp;window=7d" in html


def test_plot_pages_reject_bad_window(client, mesh):
    for url in ("/plots/latency/?window=soon", "/plots/streams/?window=soon"):
        response = client.get(url)
        assert response.status_code == 400
        assert "invalid window" in response.content.decode()


def test_export_links_answer_with_the_data(client, mesh):
    pages = ("/plots/latency/?protocol=https&window=latest", "/plots/streams/?protocol=https")
    for page in pages:
        html = client.get(page).content.decode()
        links = [href.replace("&amp;", "&") for href in re.findall(r'href="(/api/v1/[^"]+)"', html)]
        assert len(links) == 2, page
        for link in links:
            response = client.get(link)
            assert response.status_code == 200, link
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert b"alpha" in body, link
    latest = client.get(pages[0]).content.decode()
    assert f"campaign={mesh['campaign']}" in latest
    pair = client.get("/pairs/bravo/alpha/").content.decode()
    csv_link = re.search(r'href="(/api/v1/measurements/[^"]*rows=transfers[^"]*)"', pair)
    response = client.get(csv_link.group(1).replace("&amp;", "&"))
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    assert "timeout" in body and "timeout talking to alpha" in body

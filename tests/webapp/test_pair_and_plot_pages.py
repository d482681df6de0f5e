"""The pair page, the plot pages and their export links through Django's test client, on
PostgreSQL, with known data."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.webapp_pages import figure, store_mesh
from webapp.dashboard.history import RECENT_MEASUREMENTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def mesh(store) -> dict:
    """Three nodes, one campaign, known values (pages_support.store_mesh)."""
    return store_mesh(store)


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
    a_month_ago = timezone.now() - timedelta(days=30)  # outside 7 days, inside 90
    store(src="delta", dst="echo", protocol="https", streams=1, gbps=3.0, started=a_month_ago)
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

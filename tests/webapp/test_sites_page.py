"""The Sites page (issue 23): per site pair, protocol and streams, the scaling curve (its
points and the ideal line m x one host's) and the hop-overhead table with STFC's published
row; empty states saying what to run; the navigation links it only when sites exist; its
queries do not grow with sites."""

import json
import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.webapp.site_payloads import lookup, sweep_point

pytestmark = pytest.mark.django_db

NAV_LINK = '<a href="/sites/"'


@pytest.fixture
def post(reporter):
    def send(url: str, body: dict) -> None:
        response = reporter.post(url, body, format="json")
        assert response.status_code == 201, response.content

    return send


def figures(html: str) -> dict[str, dict]:
    found = re.findall(r'<script id="(scaling-\d+)" type="application/json">(.*?)</script>', html)
    return {name: json.loads(text) for name, text in found}


def test_without_sites_the_page_says_what_to_run_and_the_nav_hides_it(client, store):
    store(src="a", dst="b", gbps=10.0)
    assert NAV_LINK not in client.get("/").content.decode()
    response = client.get("/sites/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "tpcbench campaign run --scope site --sweep-hosts" in html
    assert "tpcbench campaign run --scope site --lookups" in html
    assert "STFC (published): 0.3-1.5 s per hop" in html
    assert "plotly" not in html and 'aria-current="page">Sites' in html


def test_the_scaling_curves_and_the_hop_table(client, post):
    for hosts, gbps in ((1, 4.0), (2, 7.0), (3, 9.0), (None, 8.0)):
        post("/api/v1/measurements/", sweep_point(hosts=hosts, gbps=gbps))
    post("/api/v1/measurements/", sweep_point(hosts=2, gbps=5.0, protocol="root"))
    post("/api/v1/lookups/", lookup(level="local", step_seconds=(0.01, 0.002), level_rtt_ms=0))
    post("/api/v1/lookups/", lookup(step_seconds=(0.4, 0.3, 0.1)))
    html = client.get("/sites/", {"window": "1d"}).content.decode()
    assert NAV_LINK in html
    drawn = figures(html)
    assert list(drawn) == ["scaling-0", "scaling-1"]  # a -> b https, a -> b root
    measured, ideal = drawn["scaling-0"]["data"]
    assert measured["x"] == [1, 2, 3]
    assert measured["y"] == pytest.approx([4.0, 7.0, 9.0], rel=1e-3)
    assert ideal["y"] == pytest.approx([4.0, 8.0, 12.0], rel=1e-3)
    assert ideal["line"]["dash"] == "dash"
    assert [t["name"] for t in drawn["scaling-1"]["data"]] == [
        "measured (mean of the sweep's points)"
    ]
    assert "a → b · https · 8 streams" in html and "a → b · root · 8 streams" in html
    rows = re.findall(r'<tr><th scope="row">([^<]*)</th>(.*?)</tr>', html, re.S)
    cells = {unescape(label): re.findall(r"<td[^>]*>([^<]*)</td>", rest) for label, rest in rows}
    local = cells["Local: the file's own site's redirector"]
    regional = cells["Regional redirector"]
    assert local == ["https", "1", "0", "0.012", "1", "0.012", "0.0"]
    assert regional == ["https", "1", "0", "0.800", "2", "0.400", "30.0"]
    assert re.search(r"STFC \(published\)</th><td[^>]*>0.3-1.5</td>", html)
    assert "0.88" in html  # two hosts' efficiency: 7 / 8
    assert "plotly.min.js" in html


def test_a_bad_window_is_a_400_saying_why(client):
    response = client.get("/sites/", {"window": "fortnight"})
    assert response.status_code == 400 and "invalid window" in response.content.decode()


def test_the_nav_links_sites_once_a_lookup_or_site_measurement_exists(client, post, store):
    store(src="a", dst="b", gbps=10.0)
    assert NAV_LINK not in client.get("/plots/latency/").content.decode()
    post("/api/v1/lookups/", lookup())
    assert NAV_LINK in client.get("/plots/latency/").content.decode()


def test_page_queries_do_not_grow_with_sites(client, post):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/sites/", {"window": "1d"}).status_code == 200
        return len(queries)

    post("/api/v1/measurements/", sweep_point(hosts=1, gbps=1.0))
    post("/api/v1/lookups/", lookup())
    small = count()
    for site in ("c", "d", "e"):
        post("/api/v1/lookups/", lookup(site=site, level="global"))
        for hosts in (1, 2):
            post("/api/v1/measurements/", sweep_point(hosts=hosts, gbps=1.0, dst_site=site))
    assert count() == small
    assert count() < small  # the aggregates and the navigation's answer come from the cache


def test_the_pair_page_of_two_redirectors_leaves_the_sweep_out(client, post):
    front = sweep_point(hosts=None, gbps=8.0)
    post("/api/v1/measurements/", front)
    for hosts, gbps in ((1, 4.0), (2, 7.0)):
        post("/api/v1/measurements/", sweep_point(hosts=hosts, gbps=gbps))
    html = client.get("/pairs/a-rdr/b-rdr/").content.decode()
    history = json.loads(
        re.search(
            r'<script id="history-figure" type="application/json">(.*?)</script>', html
        ).group(1)
    )
    (series,) = [t for t in history["data"] if t.get("yaxis") != "y2" and "link" not in t["name"]]
    assert series["y"] == [pytest.approx(8.0, rel=1e-3)]
    # Its transfer table too: the front's transfers (a-1 -> b-1), none of the 2-host point's.
    assert "a-1:1094 → b-1:1094" in html and "a-2:1094" not in html

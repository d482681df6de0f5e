"""The sites' aggregates (issue 23): GET /api/v1/hop-overhead/ (per level and protocol: the
lookups, failures, medians of seconds, hops, seconds per hop and level RTT, with STFC's
figure beside them) and GET /api/v1/site-scaling/ (per site pair, protocol, streams and
hosts: the sweep's mean aggregate and its efficiency against one host); JSON and CSV,
filtered, 400s naming a bad parameter, a bounded number of queries."""

import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.webapp.site_payloads import lookup, sweep_point

pytestmark = pytest.mark.django_db

HOPS = "/api/v1/hop-overhead/"
SCALING = "/api/v1/site-scaling/"


@pytest.fixture
def post(reporter):
    def send(url: str, body: dict) -> None:
        response = reporter.post(url, body, format="json")
        assert response.status_code == 201, response.content

    return send


@pytest.fixture
def lookups(post) -> None:
    """local: 2 lookups (1 hop each); regional: 3 (2 hops; one of them failed); global:
    1 root:// lookup (3 hops)."""
    post("/api/v1/lookups/", lookup(level="local", step_seconds=(0.01, 0.002), level_rtt_ms=0))
    post("/api/v1/lookups/", lookup(level="local", step_seconds=(0.03, 0.004), level_rtt_ms=0))
    post("/api/v1/lookups/", lookup(step_seconds=(0.4, 0.3, 0.1)))
    post("/api/v1/lookups/", lookup(step_seconds=(0.8, 0.6, 0.2), level_rtt_ms=10.0))
    post("/api/v1/lookups/", lookup(step_seconds=(0.1, 9.0), outcome="failure"))
    glob = lookup(level="global", protocol="root", step_seconds=(0.3, 0.2, 0.1))
    glob["steps"].insert(1, {"server": "regional:1094", "seconds": 0.3})
    post("/api/v1/lookups/", glob)


def test_hop_overhead_per_level_and_protocol(anonymous, lookups):
    response = anonymous.get(HOPS, {"window": "1d"})
    assert response.status_code == 200, response.content
    result = response.json()
    assert result["reference"] == {
        "source": "STFC (published)",
        "seconds_per_hop_low": 0.3,
        "seconds_per_hop_high": 1.5,
    }
    levels = {(r["level"], r["protocol"]): r for r in result["levels"]}
    assert list(levels) == [("local", "https"), ("regional", "https"), ("global", "root")]
    local, regional, glob = levels.values()
    assert (local["lookups"], local["failed"], local["median_hops"]) == (2, 0, 1)
    assert local["median_seconds"] == pytest.approx(0.023)  # median of 0.012 and 0.034
    assert local["median_level_rtt_ms"] == 0
    assert (regional["lookups"], regional["failed"], regional["median_hops"]) == (3, 1, 2)
    assert regional["median_seconds"] == pytest.approx(1.2)  # of 0.8 and 1.6
    assert regional["median_seconds_per_hop"] == pytest.approx(0.6)  # of 0.4 and 0.8
    assert regional["median_level_rtt_ms"] == pytest.approx(30.0)  # of 30, 10, 30
    assert (glob["median_hops"], glob["median_seconds"]) == (3, pytest.approx(0.9))
    assert glob["median_seconds_per_hop"] == pytest.approx(0.3)
    only_root = anonymous.get(HOPS, {"window": "1d", "protocol": "root"}).json()
    assert [r["level"] for r in only_root["levels"]] == ["global"]


def test_hop_overhead_csv_and_errors(anonymous, lookups):
    response = anonymous.get(HOPS, {"window": "1d", "format": "csv"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["level"] for r in rows] == ["local", "regional", "global"]
    assert rows[1]["median_seconds_per_hop"] == "0.6"
    for bad in ({"window": "fortnight"}, {"protocol": "gridftp"}):
        answer = anonymous.get(HOPS, bad)
        assert answer.status_code == 400 and list(answer.json()) == list(bad), bad
    assert anonymous.get(HOPS, {"window": "latest"}).json()["levels"] == []  # no campaign


@pytest.fixture
def sweep(post) -> None:
    """a -> b over https with 8 streams: one host 4 Gbps (two points: 3 and 5), two hosts
    7 Gbps, three 9 Gbps; through the fronts 8 Gbps (not a sweep point); b -> a: two hosts
    only; a -> b with 1 stream: one host 2 Gbps."""
    for hosts, gbps in ((1, 3.0), (1, 5.0), (2, 7.0), (3, 9.0), (None, 8.0)):
        post("/api/v1/measurements/", sweep_point(hosts=hosts, gbps=gbps))
    post("/api/v1/measurements/", sweep_point(hosts=2, gbps=6.0, src_site="b", dst_site="a"))
    post("/api/v1/measurements/", sweep_point(hosts=1, gbps=2.0, streams=1))


def test_site_scaling_points_and_efficiency(anonymous, sweep):
    response = anonymous.get(SCALING, {"window": "1d"})
    assert response.status_code == 200, response.content
    points = response.json()["points"]
    keys = [(p["src_site"], p["dst_site"], p["streams"], p["hosts"]) for p in points]
    assert keys == [("a", "b", 8, 1), ("a", "b", 8, 2), ("a", "b", 8, 3), ("a", "b", 1, 1),
                    ("b", "a", 8, 2)]  # fmt: skip
    one, two, three, single, back = points
    assert (one["measurements"], one["throughput_gbps"]) == (2, pytest.approx(4.0, rel=1e-3))
    assert one["efficiency"] == pytest.approx(1.0)
    assert two["ideal_gbps"] == pytest.approx(8.0, rel=1e-3)
    assert two["efficiency"] == pytest.approx(7.0 / 8.0, rel=1e-3)
    assert three["efficiency"] == pytest.approx(9.0 / 12.0, rel=1e-3)
    assert single["efficiency"] == pytest.approx(1.0)
    assert (back["ideal_gbps"], back["efficiency"]) == (None, None)  # no one-host point
    filtered = anonymous.get(SCALING, {"window": "1d", "src_site": "b", "streams": 8}).json()
    assert [p["hosts"] for p in filtered["points"]] == [2]
    assert anonymous.get(SCALING, {"window": "1d", "protocol": "root"}).json()["points"] == []


def test_site_scaling_csv_and_errors(anonymous, sweep):
    response = anonymous.get(SCALING, {"window": "1d", "format": "csv", "dst_site": "a"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["src_site"], r["hosts"], r["ideal_gbps"]) for r in rows] == [("b", "2", "")]
    for bad in ({"src_site": "A"}, {"streams": 0}, {"protocol": "ftp"}, {"window": "1y"}):
        answer = anonymous.get(SCALING, bad)
        assert answer.status_code == 400 and list(answer.json()) == list(bad), bad


def test_queries_do_not_grow_with_sites_or_lookups(anonymous, post):
    def count(url: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            assert anonymous.get(url, {"window": "1d"}).status_code == 200
        return len(queries)

    post("/api/v1/lookups/", lookup())
    post("/api/v1/measurements/", sweep_point(hosts=1, gbps=1.0))
    small = count(HOPS), count(SCALING)
    assert small == (2, 2)  # the data version (cache key) + the rows
    for site in ("c", "d", "e"):
        post("/api/v1/lookups/", lookup(site=site, level="global"))
        for hosts in (1, 2):
            post("/api/v1/measurements/", sweep_point(hosts=hosts, gbps=1.0, dst_site=site))
    assert (count(HOPS), count(SCALING)) == small
    assert (count(HOPS), count(SCALING)) == (1, 1)  # now from the cache: the version only

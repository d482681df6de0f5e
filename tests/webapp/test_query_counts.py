"""Queries per endpoint do not grow with the number of nodes (netbox-style pinned counts)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.support.webapp_payloads import baseline, prelim_run
from tests.webapp.site_payloads import lookup

pytestmark = pytest.mark.django_db

# Pinned: a change here is a deliberate decision, like netbox's query-count tests.
ENDPOINTS = {
    "/api/v1/measurements/": 2,  # count + page
    "/api/v1/measurements/?expand=transfers": 3,  # + transfers prefetch
    "/api/v1/nodes/": 2,
    "/api/v1/campaigns/": 2,
    "/api/v1/baselines/": 2,  # count + page (nodes and campaign joined)
    "/api/v1/prelim-runs/": 3,  # count + page + their points (prefetched)
    "/api/v1/lookups/": 2,  # count + page (campaign joined)
    # Aggregates (the ORM on any database): data version (cache key) + [latest campaign] +
    # aggregate + node names
    "/api/v1/throughput-vs-latency/?window=latest": 4,
    "/api/v1/throughput-vs-latency/?window=20d": 3,
    "/api/v1/stream-comparison/?window=20d": 3,
    "/maddash/grids/": 1,  # one existence probe per protocol, in one query
    # Grids: data version + [latest campaign] + aggregate + the failure reason of the mesh's
    # one all-failed band (its measurement, its transfers) + nodes + thresholds
    "/maddash/grids/https?window=latest": 7,
    "/maddash/grids/https?window=20d": 6,
}
CACHED = [url for url in ENDPOINTS if "window=" in url]


@pytest.fixture
def load_mesh(reporter, make_payload):
    """Every ordered pair of `nodes` nodes, 8 and 1 streams, in one finished campaign."""

    def load(nodes: int) -> None:
        campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
        names = [f"n{i:02d}" for i in range(nodes)]
        items = [
            make_payload(
                src=a,
                dst=b,
                streams=k,
                campaign=campaign,
                failed=11 if (a, b) == (names[0], names[1]) else 0,
            )
            for a in names
            for b in names
            if a != b
            for k in (8, 1)
        ]
        response = reporter.post("/api/v1/measurements/", items, format="json")
        assert response.json()["created"] == len(items)
        reporter.patch(f"/api/v1/campaigns/{campaign}/", {"state": "finished"}, format="json")
        for a in names:  # a link baseline per pair, a preliminary run and a lookup per node
            run = prelim_run(node=a)
            assert reporter.post("/api/v1/prelim-runs/", run, format="json").status_code == 201
            found = lookup(campaign=campaign)
            assert reporter.post("/api/v1/lookups/", found, format="json").status_code == 201
            for b in names:
                if a != b:
                    body = baseline(src=a, dst=b, campaign=campaign)
                    assert (
                        reporter.post("/api/v1/baselines/", body, format="json").status_code == 201
                    )

    return load


def counts() -> dict[str, int]:
    client = APIClient()
    found = {}
    for url in ENDPOINTS:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert response.status_code == 200, (url, response.content)
        found[url] = len(queries)
    return found


@pytest.mark.parametrize("nodes", [3, 10])
def test_query_counts_are_pinned(load_mesh, nodes):
    load_mesh(nodes)
    assert counts() == ENDPOINTS


def test_query_counts_equal_for_3_and_10_nodes(load_mesh, django_assert_num_queries):
    load_mesh(3)
    small = counts()
    load_mesh(10)
    client = APIClient()
    for url, expected in small.items():
        with django_assert_num_queries(expected):
            client.get(url)


def test_aggregates_come_from_the_cache_until_the_data_changes(load_mesh, ingest):
    load_mesh(3)
    counts()
    client = APIClient()
    for url in CACHED:
        with CaptureQueriesContext(connection) as queries:
            client.get(url)
        assert len(queries) == 1, url  # the data version only
    before = client.get("/maddash/grids/https?window=20d").json()
    ingest(src="n00", dst="n02", streams=8, seconds=1.0)  # a much faster measurement
    after = client.get("/maddash/grids/https?window=20d").json()
    assert after["grid"][0][2][0]["measurements"] == before["grid"][0][2][0]["measurements"] + 1
    assert after["grid"][0][2][0]["value_gbps"] > before["grid"][0][2][0]["value_gbps"]


def test_ingest_queries_do_not_grow_with_transfers_or_batch_size(reporter, make_payload):
    def queries_for(body) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = reporter.post("/api/v1/measurements/", body, format="json")
        assert response.status_code == 201, response.content
        return len(queries)

    queries_for(make_payload(src="warm", dst="up"))  # first write creates the version row
    small = queries_for(make_payload(k=2))
    assert queries_for(make_payload(k=50, src="x", dst="y")) == small
    batch_of_two = queries_for([make_payload(src="a", dst="b"), make_payload(src="b", dst="a")])
    batch_of_twenty = queries_for([make_payload(src=f"s{i}", dst=f"d{i}") for i in range(20)])
    assert batch_of_twenty == batch_of_two

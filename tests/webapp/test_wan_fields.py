"""What an emulated WAN adds to a measurement (rtt_target_ms, the node's link capacity) and
grid thresholds that follow the link capacity unless a Threshold row says otherwise."""

import pytest

from tests.support.reads_reference import reference_grids, rounded
from webapp.results.api.maddash import grid_document
from webapp.results.grid import limits as grid_limits
from webapp.results.grid import queries as grid_model
from webapp.results.grid.queries import grid_bands
from webapp.results.models import Node, Threshold

pytestmark = pytest.mark.django_db
GIB_BITS = 2**30 * 8


def maddash_grid(**query) -> dict:
    """A grid's MaDDash JSON, as GET /maddash/grids/<name> answers it."""
    return grid_document(grid_bands(**query))


def seconds_for(gbps: float, k: int = 11) -> float:
    return k * GIB_BITS / (gbps * 1e9)


@pytest.fixture
def post(reporter, make_payload):
    """POST a payload with extra top-level keys (the WAN fields); returns the response."""

    def send(extra: dict | None = None, **kwargs):
        body = {**make_payload(**kwargs), **(extra or {})}
        return body, reporter.post("/api/v1/measurements/", body, format="json")

    return send


def cell_status(grid: dict, src: str, dst: str) -> list[int]:
    row = [r["name"] for r in grid["rows"]].index(src)
    return [band["status"] for band in grid["grid"][row][grid["columnNames"].index(dst)]]


def test_rtt_target_is_stored_and_checked_with_the_orchestrators_rule(post, anonymous):
    within = {"rtt_target_ms": 30.0}
    body, response = post(within, rtt_ms=31.4)  # 5% of 30 is 1.5 ms
    assert response.status_code == 201, response.content
    shown = anonymous.get(f"/api/v1/measurements/{body['uuid']}/").json()
    assert (shown["rtt_target_ms"], shown["rtt_within_target"]) == (30.0, True)
    _, again = post(within, rtt_ms=31.4)
    assert again.status_code == 201
    body, response = post({"rtt_target_ms": 10.0}, rtt_ms=11.2)  # 1 ms is the floor
    assert (
        anonymous.get(f"/api/v1/measurements/{body['uuid']}/").json()["rtt_within_target"] is False
    )
    body, response = post(rtt_ms=11.2)  # no target: not checked
    shown = anonymous.get(f"/api/v1/measurements/{body['uuid']}/").json()
    assert (shown["rtt_target_ms"], shown["rtt_within_target"]) == (None, None)
    streamed = anonymous.get("/api/v1/measurements/?format=csv").streaming_content
    csv = b"".join(streamed).decode()
    assert csv.splitlines()[0].split(",")[8:10] == ["rtt_ms", "rtt_target_ms"]


def test_a_retry_with_a_target_is_recognised_and_a_changed_target_conflicts(post, reporter):
    body, response = post({"rtt_target_ms": 30.0}, rtt_ms=30.2)
    assert response.status_code == 201
    assert reporter.post("/api/v1/measurements/", body, format="json").status_code == 200
    changed = {**body, "rtt_target_ms": 60.0}
    assert reporter.post("/api/v1/measurements/", changed, format="json").status_code == 409


def test_link_capacity_reported_with_a_measurement_is_kept_on_the_nodes(post, anonymous):
    _, response = post({"src_link_gbps": 2.0, "dst_link_gbps": 10.0}, src="a", dst="b")
    assert response.status_code == 201
    assert dict(Node.objects.values_list("name", "link_gbps")) == {"a": 2.0, "b": 10.0}
    post({"src_link_gbps": 5.0}, src="a", dst="c")  # a changed capacity replaces the old one
    post(src="b", dst="c")  # nothing reported: nothing changes
    assert dict(Node.objects.values_list("name", "link_gbps")) == {"a": 5.0, "b": 10.0, "c": None}
    nodes = {n["name"]: n for n in anonymous.get("/api/v1/nodes/").json()["results"]}
    assert nodes["a"]["link_gbps"] == 5.0
    _, bad = post({"dst_link_gbps": 0}, src="a", dst="b")
    assert bad.status_code == 400 and "dst_link_gbps" in bad.json()
    post({"src_link_gbps": None}, src="a", dst="b")  # the cap was lifted: forgotten
    assert dict(Node.objects.values_list("name", "link_gbps")) == {"a": None, "b": 10.0, "c": None}


@pytest.fixture
def two_gbit_lab(post):
    """Three nodes on 2 Gbit/s links: OK >= 0.6, WARNING >= 0.2 Gbit/s by default."""
    links = {"src_link_gbps": 2.0, "dst_link_gbps": 2.0}
    post(links, src="a", dst="b", seconds=seconds_for(0.7))
    post(links, src="b", dst="c", seconds=seconds_for(0.3))
    post(links, src="c", dst="a", seconds=seconds_for(0.1))


def test_default_thresholds_are_fractions_of_the_link(two_gbit_lab):
    grid = maddash_grid(name="https", window="24h")
    assert cell_status(grid, "a", "b")[0] == grid_limits.OK
    assert cell_status(grid, "b", "c")[0] == grid_limits.WARNING
    assert cell_status(grid, "c", "a")[0] == grid_limits.CRITICAL
    assert grid["statusLabels"][0] == "Throughput >= 0.6 Gbps (2 Gbit/s links)"
    assert grid["statusLabels"][2].startswith("Throughput < 0.2 Gbps")


def test_fractions_come_from_the_settings(two_gbit_lab, settings):
    settings.TPCBENCH_OK_LINK_FRACTION = 0.1  # 0.2 Gbit/s
    settings.TPCBENCH_WARNING_LINK_FRACTION = 0.1
    grid = maddash_grid(name="https", window="24h")
    assert cell_status(grid, "b", "c")[0] == grid_limits.OK


def test_a_threshold_row_in_the_admin_still_wins(two_gbit_lab):
    Threshold.objects.create(protocol="https", ok_gbps=0.25, warning_gbps=0.05)
    grid = maddash_grid(name="https", window="24h")
    assert [cell_status(grid, *pair)[0] for pair in (("b", "c"), ("c", "a"))] == [
        grid_limits.OK,
        grid_limits.WARNING,
    ]
    assert grid["statusLabels"][0] == "Throughput >= 0.25 Gbps"
    c, a = Node.objects.get(name="c"), Node.objects.get(name="a")
    Threshold.objects.create(protocol="https", src=c, dst=a, ok_gbps=0.05, warning_gbps=0.01)
    grid = maddash_grid(name="https", window="24h")
    assert cell_status(grid, "c", "a")[0] == grid_limits.OK


@pytest.mark.parametrize("window", ["latest", "24h"])
def test_mixed_links_limit_each_pair_by_its_smaller_link(post, window):
    post({"src_link_gbps": 2.0, "dst_link_gbps": 10.0}, src="a", dst="b", seconds=seconds_for(1))
    post({"src_link_gbps": 10.0}, src="b", dst="c", seconds=seconds_for(2.5))  # c: unknown
    post(src="c", dst="a", seconds=seconds_for(0.5))
    grids = grid_model.build_bands(["https"], window)
    assert rounded(grids) == rounded(reference_grids(["https"], window))
    grid = maddash_grid(name="https", window="24h")
    assert cell_status(grid, "a", "b")[0] == grid_limits.OK  # 1 >= 0.3 x min(2, 10)
    assert cell_status(grid, "b", "c")[0] == grid_limits.WARNING  # 2.5 < 0.3 x 10
    assert cell_status(grid, "c", "a")[0] == grid_limits.WARNING  # 0.5 < 0.3 x 2 (a's, known)
    assert grid["statusLabels"][0] == "Throughput >= 30% of the pair's link"


def test_a_campaign_keeps_its_rtt_check_and_counts_the_pairs_off_target(reporter, anonymous):
    uuid = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    checks = [
        {"src": "a", "dst": "b", "target_ms": 30.0, "measured_ms": 30.6, "within_target": True},
        {"src": "b", "dst": "a", "target_ms": 30.0, "measured_ms": 41.0, "within_target": False},
        {"src": "a", "dst": "c", "target_ms": 60.0, "measured_ms": None, "within_target": False},
    ]
    body = {"state": "running", "rtt_checks": checks}
    assert reporter.patch(f"/api/v1/campaigns/{uuid}/", body, format="json").status_code == 200
    campaign = anonymous.get(f"/api/v1/campaigns/{uuid}/").json()
    assert campaign["rtt_checks"] == checks and campaign["rtt_off"] == 2
    bad = [{**checks[0], "target_ms": "thirty"}]
    response = reporter.patch(f"/api/v1/campaigns/{uuid}/", {"rtt_checks": bad}, format="json")
    assert response.status_code == 400 and "rtt_checks" in response.json()

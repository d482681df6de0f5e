"""MaDDash-compatible grid JSON: shape, statuses, thresholds, failures, windows."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.reads_reference import reference_grids, rounded
from webapp.results.api.maddash import grid_document
from webapp.results.grid import limits as grid_limits
from webapp.results.grid import queries as grid_model
from webapp.results.grid.queries import grid_bands
from webapp.results.models import Campaign, Node, Threshold
from webapp.results.selectors.campaigns import CampaignStart

pytestmark = pytest.mark.django_db

MADDASH_KEYS = {
    "name",
    "statusLabels",
    "lastUpdateTime",
    "columnNames",
    "columnProps",
    "checkNames",
    "grid",
    "rows",
    "report",
}
GIB_BITS = 2**30 * 8


def maddash_grid(**query) -> dict:
    """A grid's MaDDash JSON, as GET /maddash/grids/<name> answers it."""
    return grid_document(grid_bands(**query))


def seconds_for(gbps: float, k: int = 11) -> float:
    return k * GIB_BITS / (gbps * 1e9)


def cell(grid: dict, src: str, dst: str) -> list[dict]:
    return grid["grid"][[r["name"] for r in grid["rows"]].index(src)][
        grid["columnNames"].index(dst)
    ]


@pytest.fixture
def mesh(ingest):
    ingest(src="a", dst="b", streams=8, seconds=seconds_for(40))
    ingest(src="a", dst="b", streams=1, seconds=seconds_for(20))
    ingest(src="b", dst="a", streams=8, seconds=seconds_for(5))
    ingest(src="a", dst="c", streams=8, seconds=seconds_for(40), failed=2)
    ingest(src="c", dst="a", streams=8, seconds=seconds_for(40), failed=11, error_class="connect")
    ingest(src="a", dst="b", protocol="gridftp", seconds=seconds_for(35))


def test_grid_list_names_protocols_with_results(mesh, anonymous):
    assert grid_model.grid_names() == ["https", "gridftp"]
    body = anonymous.get("/maddash/grids/").json()
    assert body == {
        "grids": [
            {"name": "https", "uri": "/maddash/grids/https"},
            {"name": "gridftp", "uri": "/maddash/grids/gridftp"},
        ]
    }


def test_grid_has_maddash_shape(mesh, anonymous):
    response = anonymous.get("/maddash/grids/https?window=24h")
    assert response.status_code == 200
    grid = response.json()
    assert set(grid) >= MADDASH_KEYS
    assert grid["name"] == "https"
    assert len(grid["statusLabels"]) == 5
    assert grid["checkNames"] == ["8 streams", "1 stream"]
    assert grid["columnNames"] == ["a", "b", "c"]
    assert [r["name"] for r in grid["rows"]] == ["a", "b", "c"]
    assert grid["columnProps"] == [{"label": n} for n in "abc"]
    assert all(grid["grid"][i][i] is None for i in range(3))
    for check in cell(grid, "a", "b"):
        assert {"message", "status", "prevCheckTime", "uri"} <= set(check)
    assert sum(grid["report"]["global"]["stats"]) == 6 * 2
    assert isinstance(grid["lastUpdateTime"], int)


def test_statuses_follow_default_thresholds_and_failures(mesh):
    grid = maddash_grid(name="https", window="24h")
    eight, one = cell(grid, "a", "b")
    assert (eight["status"], one["status"]) == (grid_limits.OK, grid_limits.WARNING)
    assert eight["value_gbps"] == pytest.approx(40)
    assert "40.00 Gbps" in eight["message"]
    assert cell(grid, "b", "a")[0]["status"] == grid_limits.CRITICAL
    partial = cell(grid, "a", "c")[0]
    assert partial["status"] == grid_limits.WARNING  # 40 Gbps but 2 of 11 failed
    assert "2/11 failed" in partial["message"]
    dead = cell(grid, "c", "a")[0]
    assert dead["status"] == grid_limits.CRITICAL
    assert "All 11 transfers failed: connect" in dead["message"]
    assert "connect talking to a" in dead["message"]
    assert cell(grid, "b", "c")[0]["status"] == grid_limits.NOT_RUN
    assert cell(grid, "b", "c")[0]["prevCheckTime"] is None


def test_thresholds_most_specific_wins(mesh):
    a, b = Node.objects.get(name="a"), Node.objects.get(name="b")
    Threshold.objects.create(protocol="https", ok_gbps=50, warning_gbps=4)
    Threshold.objects.create(protocol="https", src=a, dst=b, ok_gbps=15, warning_gbps=10)
    grid = maddash_grid(name="https", window="24h")
    assert [c["status"] for c in cell(grid, "a", "b")] == [grid_limits.OK, grid_limits.OK]
    assert cell(grid, "b", "a")[0]["status"] == grid_limits.WARNING  # 5 >= 4 (grid-wide)
    assert grid["statusLabels"][0] == "Throughput >= 50 Gbps"
    Threshold.objects.create(protocol="https", src=b, ok_gbps=1, warning_gbps=0.5)
    grid = maddash_grid(name="https", window="24h")
    assert cell(grid, "b", "a")[0]["status"] == grid_limits.OK


@pytest.mark.parametrize("window", ["latest", "24h"])
def test_grids_equal_the_ones_computed_by_hand(mesh, ingest, reporter, window):
    """The grids' ORM aggregates (any database) against the same figures summed in Python."""
    campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    ingest(src="a", dst="c", streams=1, seconds=seconds_for(3), campaign=campaign)
    earlier = timezone.now() - timedelta(hours=2)
    ingest(src="c", dst="b", failed=11, error_class="auth", started=earlier)
    ingest(src="c", dst="b", failed=11, error_class="timeout", campaign=campaign)
    ingest(src="c", dst="b", streams=1, failed=11, error_class="tls", campaign=campaign)
    reporter.patch(f"/api/v1/campaigns/{campaign}/", {"state": "finished"}, format="json")
    a, b = Node.objects.get(name="a"), Node.objects.get(name="b")
    Threshold.objects.create(protocol="https", ok_gbps=50, warning_gbps=4)
    Threshold.objects.create(protocol="https", dst=b, ok_gbps=15, warning_gbps=10)
    Threshold.objects.create(protocol="gridftp", src=a, dst=b, ok_gbps=45, warning_gbps=1)
    for protocols in (["https"], ["gridftp"], ["root"], ["https", "gridftp", "root"]):
        found = grid_model.build_bands(protocols, window)
        assert rounded(found) == rounded(reference_grids(protocols, window))
    by_hand = reference_grids(grid_model.grid_names(), window, campaign=True)
    all_grids = grid_model.all_grid_bands(window=window)
    assert rounded(all_grids) == rounded(by_hand)
    assert [g.name for g in all_grids] == ["https", "gridftp"]
    started = Campaign.objects.get(uuid=campaign).started
    assert all_grids[0].campaign == (CampaignStart(started) if window == "latest" else None)
    messages = [band[1] for row in all_grids[0].cells for c in row if c for band in c]
    assert any("transfers failed: timeout" in m for m in messages)  # the latest failure


def test_window_excludes_older_measurements(ingest):
    ingest(src="a", dst="b", seconds=seconds_for(40), started=timezone.now() - timedelta(days=3))
    assert cell(maddash_grid(name="https", window="24h"), "a", "b")[0]["status"] == 4
    assert cell(maddash_grid(name="https", window="7d"), "a", "b")[0]["status"] == 0


def test_latest_window_is_the_default(ingest, reporter):
    campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    ingest(src="a", dst="b", seconds=seconds_for(5))
    ingest(src="a", dst="b", seconds=seconds_for(40), campaign=campaign)
    grid = reporter.get("/maddash/grids/https").json()
    assert grid["window"] == "latest"
    assert cell(grid, "a", "b")[0]["value_gbps"] == pytest.approx(40)


def test_unknown_grid_is_404_and_bad_window_is_400(mesh, anonymous):
    assert anonymous.get("/maddash/grids/ftp").status_code == 404
    response = anonymous.get("/maddash/grids/https?window=fortnight")
    assert response.status_code == 400
    assert "window" in response.json()


def test_empty_database_gives_no_grids_and_a_not_run_grid(db):
    assert grid_model.grid_names() == []
    grid = maddash_grid(name="root")
    assert grid["grid"] == [] and grid["checkNames"] == ["8 streams", "1 stream"]


def test_check_uri_serves_the_check_with_paged_history(mesh, ingest, anonymous):
    ingest(src="c", dst="a", streams=8, seconds=seconds_for(35))  # recovered since
    grid = anonymous.get("/maddash/grids/https?window=24h").json()
    uri = cell(grid, "c", "a")[0]["uri"]
    assert uri == "/maddash/grids/https/c/a/8%20streams"
    check = anonymous.get(uri).json()
    assert (check["gridName"], check["rowName"], check["colName"], check["checkName"]) == (
        "https",
        "c",
        "a",
        "8 streams",
    )
    assert (check["status"], check["statusShortName"]) == (grid_limits.OK, "OK")
    assert [h["status"] for h in check["history"]] == [grid_limits.OK, grid_limits.CRITICAL]
    assert "connect" in check["history"][1]["message"]
    assert check["history"][0]["returnParams"]["Average"] == pytest.approx(35)
    paged = anonymous.get(uri.replace("%20", "+"), {"resultsPerPage": 1, "page": 1}).json()
    assert paged["historyPageCount"] == 2 and len(paged["history"]) == 1
    assert paged["history"][0]["status"] == grid_limits.CRITICAL
    assert paged["status"] == grid_limits.OK  # the current state stays the latest


def test_row_uri_serves_the_rows_cells_with_their_checks(mesh, anonymous):
    grid = anonymous.get("/maddash/grids/https?window=24h").json()
    assert [r["uri"] for r in grid["rows"]] == [f"/maddash/grids/https/{n}" for n in "abc"]
    row = anonymous.get(grid["rows"][0]["uri"], {"window": "24h"}).json()
    assert (row["name"], row["gridName"], row["window"]) == ("a", "https", "24h")
    assert [c["name"] for c in row["cells"]] == ["b", "c"]  # no cell to itself
    assert [c["uri"] for c in row["cells"]] == [
        "/maddash/grids/https/a/b",
        "/maddash/grids/https/a/c",
    ]
    # The same checks as the grid's own cells.
    assert row["cells"][0]["checks"] == cell(grid, "a", "b")
    assert row["cells"][1]["checks"] == cell(grid, "a", "c")
    assert row["cells"][1]["checks"][0]["status"] == grid_limits.WARNING  # 2 of 11 failed
    one = anonymous.get(row["cells"][0]["uri"], {"window": "24h"}).json()
    assert (one["rowName"], one["colName"]) == ("a", "b")
    assert one["checks"] == cell(grid, "a", "b")
    assert anonymous.get(one["checks"][0]["uri"]).json()["checkName"] == "8 streams"


@pytest.mark.parametrize(
    "path",
    [
        "/maddash/grids/ftp/a",
        "/maddash/grids/https/zz",
        "/maddash/grids/https/a/zz",
        "/maddash/grids/https/a/a",
        "/maddash/grids/ftp/a/b/8%20streams",
        "/maddash/grids/https/a/zz/8%20streams",
        "/maddash/grids/https/a/a/8%20streams",
        "/maddash/grids/https/a/b/eight",
    ],
)
def test_unknown_row_cell_or_check_is_404(mesh, anonymous, path):
    assert anonymous.get(path).status_code == 404


def test_row_with_bad_window_is_400(mesh, anonymous):
    response = anonymous.get("/maddash/grids/https/a", {"window": "fortnight"})
    assert response.status_code == 400
    assert "window" in response.json()

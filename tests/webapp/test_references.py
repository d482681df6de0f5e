"""Link baselines and preliminary runs: ingest (idempotent, 400s naming the field), queries,
the OpenAPI schema, measurements read as a fraction of their link, and the pages."""

from __future__ import annotations

import uuid as uuid_lib
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.webapp_payloads import GIB, baseline, point, prelim_run
from webapp.dashboard import plots
from webapp.dashboard.prelim import concurrency_figure, filesize_figure
from webapp.results.models import Baseline, Campaign, PrelimRun

pytestmark = pytest.mark.django_db


def test_a_baseline_is_stored_once_and_a_conflicting_reuse_is_refused(reporter):
    body = baseline()
    first = reporter.post("/api/v1/baselines/", body, format="json")
    assert first.status_code == 201, first.content
    assert first.json()["throughput_gbps"] == 40.0 and first.json()["src"] == "node-a"
    assert reporter.post("/api/v1/baselines/", body, format="json").status_code == 200
    changed = reporter.post("/api/v1/baselines/", {**body, "throughput_gbps": 41.0}, format="json")
    assert changed.status_code == 409 and "uuid" in changed.json()
    assert Baseline.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dst": "node-a"}, "dst"),
        ({"streams": 0}, "streams"),
        ({"streams": "8"}, "streams"),
        ({"throughput_gbps": -1.0}, "throughput_gbps"),
        ({"throughput_gbps": None, "error": ""}, "error"),
        ({"tool": "iperf3; rm -rf /"}, "tool"),
        ({"finished": "yesterday"}, "finished"),
        ({"src": "a/b"}, "src"),
    ],
)
def test_a_bad_baseline_gets_a_400_naming_the_field(reporter, change, field):
    response = reporter.post("/api/v1/baselines/", baseline(**change), format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_failed_baseline_is_kept_with_its_reason(reporter, anonymous):
    body = baseline(throughput_gbps=None, error="iperf3: unable to connect to server")
    assert reporter.post("/api/v1/baselines/", body, format="json").status_code == 201
    listed = anonymous.get("/api/v1/baselines/?src=node-a&dst=node-b").json()["results"]
    assert [(b["throughput_gbps"], b["error"]) for b in listed] == [
        (None, "iperf3: unable to connect to server")
    ]


def test_writes_need_a_reporter(anonymous):
    assert anonymous.post("/api/v1/baselines/", baseline(), format="json").status_code == 401
    assert anonymous.post("/api/v1/prelim-runs/", prelim_run(), format="json").status_code == 401


def test_a_campaigns_baseline_arriving_before_its_measurements_makes_the_campaign(reporter):
    campaign = str(uuid_lib.uuid4())
    response = reporter.post("/api/v1/baselines/", baseline(campaign=campaign), format="json")
    assert response.status_code == 201 and response.json()["campaign"] == campaign
    assert Campaign.objects.filter(uuid=campaign).exists()


def test_measurements_read_as_a_fraction_of_the_link(reporter, anonymous, store):
    now = timezone.now()
    early = baseline(started=now - timedelta(hours=5), throughput_gbps=50.0)
    late = baseline(started=now - timedelta(hours=1), throughput_gbps=20.0)
    for body in (early, late):
        assert reporter.post("/api/v1/baselines/", body, format="json").status_code == 201
    store(gbps=10.0, started=now - timedelta(hours=3))  # after the early one only
    store(gbps=10.0, started=now - timedelta(minutes=30))  # after both: the late one counts
    store(gbps=10.0, started=now - timedelta(hours=6), src="node-b", dst="node-a")  # none
    rows = anonymous.get("/api/v1/measurements/?ordering=started").json()["results"]
    seen = sorted(
        ((r["src"], r["baseline_gbps"], r["baseline_fraction"]) for r in rows),
        key=lambda row: (row[0], row[1] or 0),
    )
    assert seen[0] == ("node-a", 20.0, pytest.approx(0.5, rel=1e-3))
    assert seen[1] == ("node-a", 50.0, pytest.approx(0.2, rel=1e-3))
    assert seen[2] == ("node-b", None, None)


def test_a_prelim_run_is_stored_with_its_points_and_read_back(reporter, anonymous):
    body = prelim_run()
    created = reporter.post("/api/v1/prelim-runs/", body, format="json")
    assert created.status_code == 201, created.content
    assert reporter.post("/api/v1/prelim-runs/", body, format="json").status_code == 200
    other = {**body, "points": body["points"][:-1]}
    assert reporter.post("/api/v1/prelim-runs/", other, format="json").status_code == 409
    listed = anonymous.get("/api/v1/prelim-runs/?node=node-a&kind=concurrency").json()
    assert listed["count"] == 1
    points = listed["results"][0]["points"]
    assert len(points) == 9
    assert {(p["method"], p["concurrency"]) for p in points} == {
        (m, c) for m in ("cp", "https", "gridftp") for c in (1, 2, 3)
    }
    assert anonymous.get("/api/v1/prelim-runs/?kind=filesize").json()["count"] == 0


def test_a_prelim_run_with_a_point_twice_or_a_bad_method_is_refused(reporter):
    twice = prelim_run(points=[point("cp", 1, 9.0), point("cp", 1, 8.0)])
    response = reporter.post("/api/v1/prelim-runs/", twice, format="json")
    assert response.status_code == 400 and "points" in response.json()
    bad = prelim_run(points=[point("scp", 1, 9.0)])
    response = reporter.post("/api/v1/prelim-runs/", bad, format="json")
    assert response.status_code == 400 and "points" in response.json()
    assert PrelimRun.objects.count() == 0


def test_the_schema_describes_the_references(anonymous):
    schema = anonymous.get("/api/schema/?format=json").json()
    for path in ("/api/v1/baselines/", "/api/v1/prelim-runs/"):
        assert {"get", "post"} <= set(schema["paths"][path]), path
    measurement = schema["components"]["schemas"]["Measurement"]["properties"]
    assert {"baseline_gbps", "baseline_fraction"} <= set(measurement)


def test_the_prelim_figures_have_a_line_per_method_and_per_size(reporter):
    reporter.post("/api/v1/prelim-runs/", prelim_run(), format="json")
    sizes = [point("https", c, 3.0 * c, size) for size in (GIB, 2 * GIB) for c in (1, 2)]
    reporter.post("/api/v1/prelim-runs/", prelim_run("filesize", sizes), format="json")
    concurrency = concurrency_figure(PrelimRun.objects.get(kind="concurrency"))
    assert [t["name"] for t in concurrency["data"]] == [
        "cp (memory to memory)", "HTTPS-TPC", "GridFTP-TPC",
    ]  # fmt: skip
    assert concurrency["data"][1]["x"] == [1, 2, 3]
    assert concurrency["data"][1]["y"] == [3.0, 6.0, 9.0]
    filesize = filesize_figure(PrelimRun.objects.get(kind="filesize"))
    assert [t["name"] for t in filesize["data"]] == ["1 GiB", "2 GiB"]


def test_the_pair_history_draws_the_baseline_and_the_table_the_fraction(reporter, anonymous, store):
    now = timezone.now()
    body = baseline(started=now - timedelta(hours=2), throughput_gbps=40.0)
    reporter.post("/api/v1/baselines/", body, format="json")
    store(gbps=10.0, started=now - timedelta(hours=1), protocol="https")
    store(gbps=8.0, started=now - timedelta(hours=1), protocol="gridftp")
    page = anonymous.get("/pairs/node-a/node-b/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "25% of 40.00" in text and "20% of 40.00" in text
    traces = {t["name"]: t for t in page.context["figure"]["data"]}
    names = list(traces)
    reference = traces["link baseline (iperf3, 8 streams)"]
    assert reference["y"] == [40.0, 40.0]  # held until the latest measurement
    assert reference["x"][-1] == max(traces["https, 8 streams"]["x"])
    assert {"https, 8 streams", "gridftp, 8 streams"} <= set(names)
    assert plots.baseline_trace([]) is None


def test_the_prelim_page_says_what_to_run_when_empty(anonymous):
    page = anonymous.get("/plots/prelim/")
    assert page.status_code == 200
    assert "No preliminary runs yet" in page.content.decode()


def test_the_grid_reads_each_value_as_a_fraction_of_its_link(reporter, anonymous, store):
    now = timezone.now()
    reporter.post("/api/v1/baselines/", baseline(started=now - timedelta(hours=2)), format="json")
    store(gbps=10.0, started=now - timedelta(hours=1))  # node-a -> node-b: has a baseline
    store(gbps=10.0, started=now - timedelta(hours=1), src="node-b", dst="node-a")  # has none
    page = anonymous.get("/?window=20d").content.decode()
    # in node-a -> node-b's tooltip and in what a screen reader says of it; nowhere else
    assert page.count("10.00 Gbps (25% of the link's 40.00)") == 2
    assert page.count("of the link") == 2


def test_the_prelim_page_shows_an_earlier_run_asked_by_name(reporter, anonymous):
    earlier = prelim_run(started=timezone.now() - timedelta(days=2))
    earlier["finished"] = (timezone.now() - timedelta(days=2, minutes=-5)).isoformat()
    assert reporter.post("/api/v1/prelim-runs/", earlier, format="json").status_code == 201
    assert reporter.post("/api/v1/prelim-runs/", prelim_run(), format="json").status_code == 201
    latest = anonymous.get("/plots/prelim/").context["sections"][0]["run"]
    assert str(latest.uuid) != earlier["uuid"]
    asked = anonymous.get(f"/plots/prelim/?run={earlier['uuid']}").context["sections"][0]["run"]
    assert str(asked.uuid) == earlier["uuid"]
    assert anonymous.get("/plots/prelim/?run=not-a-uuid").status_code == 200

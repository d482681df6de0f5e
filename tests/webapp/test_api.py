"""The REST API on PostgreSQL: auth, reads, CSV, campaigns, aggregates (the ingest is
test_api_ingest.py's)."""

import csv
import io
import uuid as uuid_lib
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.results.models import Campaign, Measurement

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"
GIB_BITS = 2**30 * 8


# --- auth ---------------------------------------------------------------------------------


def test_unauthenticated_write_is_401(anonymous, make_payload):
    response = anonymous.post(URL, make_payload(), format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")
    assert anonymous.post("/api/v1/campaigns/", {}, format="json").status_code == 401
    assert Measurement.objects.count() == 0


def test_bad_token_is_401(make_payload):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert client.post(URL, make_payload(), format="json").status_code == 401


def test_user_without_permission_is_403(django_user_model, make_payload):
    user = django_user_model.objects.create_user("reader", password="x-very-long-pw")
    client = APIClient()
    client.force_authenticate(user)
    assert client.post(URL, make_payload(), format="json").status_code == 403
    assert client.get(URL).status_code == 200


def test_reads_are_anonymous_by_default(anonymous, ingest):
    ingest()
    assert anonymous.get(URL).status_code == 200
    assert anonymous.get("/api/v1/nodes/").status_code == 200


@override_settings(TPCBENCH_ANONYMOUS_READS=False)
def test_anonymous_reads_can_be_switched_off(anonymous, reporter):
    for url in (
        URL,
        "/api/v1/nodes/",
        "/api/v1/campaigns/",
        "/api/v1/stream-comparison/",
        "/api/v1/throughput-vs-latency/",
        "/maddash/grids/",
    ):
        assert anonymous.get(url).status_code == 401, url
        assert reporter.get(url).status_code == 200, url


def test_create_api_token_prints_a_working_token_as_last_word(make_payload, capsys):
    call_command("create_api_token", "ci-bot")
    token = capsys.readouterr().out.strip().splitlines()[-1].split()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.post(URL, make_payload(), format="json").status_code == 201
    call_command("create_api_token", "ci-bot")  # a new token replaces the old one
    assert client.post(URL, make_payload(), format="json").status_code == 401


def test_ensure_api_token_installs_a_given_token(make_payload, monkeypatch, capsys):
    secret = "s3cretTokenFromAHelmSecret0123456789"
    monkeypatch.setenv("TPCBENCH_API_TOKEN", secret)
    call_command("ensure_api_token", "orchestrator", token=secret)
    call_command("ensure_api_token", "orchestrator", token=secret)
    assert capsys.readouterr().out.strip().endswith("already in place")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    assert client.post(URL, make_payload(), format="json").status_code == 201


def test_ensure_api_token_refuses_a_short_token():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="20 to 40"):
        call_command("ensure_api_token", "orchestrator", token="short")


# --- reads --------------------------------------------------------------------------------


@pytest.fixture
def history(ingest):
    now = timezone.now()
    ingest(src="a", dst="b", protocol="https", streams=8, started=now - timedelta(days=3))
    ingest(src="a", dst="b", protocol="https", streams=1, started=now - timedelta(hours=5))
    ingest(src="b", dst="a", protocol="gridftp", streams=8, started=now - timedelta(hours=2))
    ingest(
        src="a", dst="c", protocol="https", streams=8, started=now - timedelta(hours=1), failed=2
    )


def test_list_is_paginated_newest_first(anonymous, history):
    body = anonymous.get(URL, {"limit": 2}).json()
    assert body["count"] == 4 and len(body["results"]) == 2 and body["next"]
    started = [r["started"] for r in body["results"]]
    assert started == sorted(started, reverse=True)
    assert "transfers" not in body["results"][0]


def test_expand_transfers(anonymous, history):
    body = anonymous.get(URL, {"expand": "transfers", "src": "a", "dst": "c"}).json()
    (only,) = body["results"]
    assert len(only["transfers"]) == 11
    assert only["transfers"][0] == {**only["transfers"][0], "index": 0, "outcome": "failure"}


def test_retrieve_by_uuid_includes_transfers(anonymous, ingest):
    body = ingest()
    data = anonymous.get(f"{URL}{body['uuid']}/").json()
    assert data["uuid"] == body["uuid"] and len(data["transfers"]) == 11
    assert anonymous.get(f"{URL}{uuid_lib.uuid4()}/").status_code == 404


def test_csv_one_row_per_measurement(anonymous, history):
    response = anonymous.get(URL, {"format": "csv", "protocol": "https"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 3
    assert {
        "uuid",
        "src",
        "dst",
        "protocol",
        "streams",
        "throughput_gbps",
        "succeeded",
        "failed",
        "rtt_ms",
        "started",
    } <= set(rows[0])
    failing = next(r for r in rows if r["dst"] == "c")
    assert (failing["succeeded"], failing["failed"]) == ("9", "2")


def test_csv_one_row_per_transfer(anonymous, history):
    response = anonymous.get(URL, {"format": "csv", "rows": "transfers", "dst": "c"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 11
    assert rows[0]["outcome"] == "failure" and rows[0]["error_class"] == "timeout"
    assert rows[5]["outcome"] == "success" and rows[5]["bytes"] == str(2**30)


def test_nodes_with_counts(anonymous, history):
    body = anonymous.get("/api/v1/nodes/").json()
    by_name = {n["name"]: n for n in body["results"]}
    assert (by_name["a"]["measurements_as_src"], by_name["a"]["measurements_as_dst"]) == (3, 1)
    assert by_name["c"]["measurements_as_src"] == 0
    assert anonymous.get("/api/v1/nodes/a/").json()["name"] == "a"


# --- campaigns ----------------------------------------------------------------------------


def test_run_now_request_is_a_pending_manual_campaign(reporter, anonymous):
    response = reporter.post("/api/v1/campaigns/", {}, format="json")
    assert response.status_code == 201
    created = response.json()
    assert (created["state"], created["trigger"]) == ("pending", "manual")
    pending = anonymous.get("/api/v1/campaigns/", {"state": "pending"}).json()["results"]
    assert [c["uuid"] for c in pending] == [created["uuid"]]


def test_orchestrator_patches_campaign_state(reporter, anonymous):
    uuid = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    running = reporter.patch(f"/api/v1/campaigns/{uuid}/", {"state": "running"}, format="json")
    assert running.status_code == 200 and running.json()["started"]
    done = reporter.patch(f"/api/v1/campaigns/{uuid}/", {"state": "finished"}, format="json")
    assert done.json()["state"] == "finished" and done.json()["finished"]
    bad = reporter.patch(f"/api/v1/campaigns/{uuid}/", {"state": "exploded"}, format="json")
    assert bad.status_code == 400 and "state" in bad.json()
    early = reporter.patch(
        f"/api/v1/campaigns/{uuid}/", {"finished": "2000-01-01T00:00:00Z"}, format="json"
    )
    assert early.status_code == 400 and "finished" in early.json()
    assert (
        anonymous.patch(
            f"/api/v1/campaigns/{uuid}/", {"state": "failed"}, format="json"
        ).status_code
        == 401
    )


def test_campaign_create_rejects_unknown_trigger(reporter):
    response = reporter.post("/api/v1/campaigns/", {"trigger": "whim"}, format="json")
    assert response.status_code == 400 and "trigger" in response.json()


# --- aggregates ---------------------------------------------------------------------------


def test_throughput_vs_latency_endpoint(anonymous, ingest):
    ingest(src="a", dst="b", rtt_ms=10.0, seconds=2.0)
    ingest(src="a", dst="c", rtt_ms=30.0, seconds=6.0)
    body = anonymous.get(
        "/api/v1/throughput-vs-latency/", {"protocol": "https", "streams": 8, "window": "20d"}
    ).json()
    assert set(body) == {
        "protocol", "auth", "client", "checksum", "streams", "window", "points", "fits"
    }  # fmt: skip
    assert (body["protocol"], body["streams"], body["window"]) == ("https", 8, "20d")
    assert {(p["src"], p["dst"]) for p in body["points"]} == {("a", "b"), ("a", "c")}
    assert set(body["fits"]["https"]) == {"slope_gbps_per_ms", "intercept_gbps", "r", "n"}
    assert body["fits"]["https"]["slope_gbps_per_ms"] < 0


def test_stream_comparison_endpoint(anonymous, ingest):
    ingest(src="a", dst="b", streams=1, seconds=8.0)
    ingest(src="a", dst="b", streams=8, seconds=2.0)
    body = anonymous.get(
        "/api/v1/stream-comparison/", {"protocol": "https", "window": "20d"}
    ).json()
    assert set(body) == {"protocol", "auth", "client", "checksum", "window", "pairs"}
    assert body["pairs"][0]["ratio"] == pytest.approx(4.0)
    assert body["pairs"][0]["multi_streams"] == 8


@pytest.mark.parametrize(
    ("url", "params", "field"),
    [
        ("/api/v1/throughput-vs-latency/", {"window": "forever"}, "window"),
        ("/api/v1/throughput-vs-latency/", {"protocol": "ftp"}, "protocol"),
        ("/api/v1/throughput-vs-latency/", {"streams": "many"}, "streams"),
        ("/api/v1/stream-comparison/", {"window": "3w"}, "window"),
        ("/api/v1/stream-comparison/", {"protocol": "scp"}, "protocol"),
    ],
)
def test_aggregate_bad_query_is_400_naming_it(anonymous, url, params, field):
    response = anonymous.get(url, params)
    assert response.status_code == 400
    assert field in response.json()


def test_api_docs_page_is_served_without_a_cdn(anonymous):
    response = anonymous.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html and "cdn" not in html.lower()
    assert anonymous.get("/api/redoc/").status_code == 200


def test_aggregates_as_csv(anonymous, ingest):
    ingest(src="a", dst="b", streams=1, seconds=8.0, rtt_ms=10.0)
    ingest(src="a", dst="b", streams=8, seconds=2.0, rtt_ms=10.0)
    latency = anonymous.get("/api/v1/throughput-vs-latency/", {"format": "csv"})
    assert latency["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(latency.content.decode())))
    assert [(r["src"], r["dst"], r["protocol"], r["measurements"]) for r in rows] == [
        ("a", "b", "https", "2")
    ]
    streams = anonymous.get("/api/v1/stream-comparison/", {"format": "csv"})
    (pair,) = csv.DictReader(io.StringIO(streams.content.decode()))
    assert float(pair["ratio"]) == pytest.approx(4.0) and pair["multi_streams"] == "8"
    empty = anonymous.get("/api/v1/stream-comparison/", {"format": "csv", "window": "latest"})
    # No rows: the header alone (an empty body would lose its Content-Type).
    assert empty.status_code == 200 and empty["Content-Type"].startswith("text/csv")
    assert empty.content == b"src,dst,single_gbps,multi_gbps,multi_streams,ratio\n"


def test_orchestrator_campaign_payload_is_accepted(reporter, make_payload):
    """What orchestrator/campaign/run.py PATCHes: uuid, state, trigger, schedule, started,
    finished."""
    campaign = str(uuid_lib.uuid4())
    reporter.post(URL, make_payload(campaign=campaign), format="json")  # created on first sight
    response = reporter.patch(
        f"/api/v1/campaigns/{campaign}/",
        {
            "uuid": campaign,
            "state": "finished",
            "trigger": "schedule",
            "schedule": "0 */12 * * *",
            "started": "2026-11-21T00:00:00Z",
            "finished": "2026-11-21T05:00:00Z",
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    stored = Campaign.objects.get(uuid=campaign)
    assert (stored.state, stored.trigger, stored.schedule) == (
        "finished",
        "schedule",
        "0 */12 * * *",
    )
    assert stored.finished.hour == 5
    missing = reporter.patch(
        f"/api/v1/campaigns/{uuid_lib.uuid4()}/", {"state": "running"}, format="json"
    )
    assert missing.status_code == 404


def test_the_orchestrators_counters_and_cycle_fit_are_kept(reporter, anonymous):
    """What `campaign_payload` sends of a journal (planned .. late, cycle_fit) is stored and
    served; a negative count is a 400 naming it; a campaign never told keeps nulls."""
    from orchestrator.campaign.journal import campaign_payload

    uuid = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    assert anonymous.get(f"/api/v1/campaigns/{uuid}/").json()["planned"] is None
    journal = {
        "uuid": uuid,
        "state": "finished",
        "planned": 12,
        "done": 9,
        "failed": 1,
        "missed": 2,
        "late": 1,
        "cycle_fit": {"mode": "rotate", "k": 2, "part": 1},
    }
    response = reporter.patch(f"/api/v1/campaigns/{uuid}/", campaign_payload(journal),
                              format="json")  # fmt: skip
    assert response.status_code == 200, response.json()
    shown = anonymous.get(f"/api/v1/campaigns/{uuid}/").json()
    assert [shown[k] for k in ("planned", "done", "failed", "missed", "late")] == [12, 9, 1, 2, 1]
    assert shown["cycle_fit"] == {"mode": "rotate", "k": 2, "part": 1}
    bad = reporter.patch(f"/api/v1/campaigns/{uuid}/", {"missed": -1}, format="json")
    assert bad.status_code == 400 and "missed" in bad.json()

"""The ingest API on PostgreSQL: derived figures, idempotency by uuid, validation, the bulk
form, concurrent ingests."""

import uuid as uuid_lib

import pytest
from django.utils import timezone

from tests.support.webapp_payloads import baseline, payload, prelim_run
from webapp.results.models import Campaign, Measurement, Node, Transfer

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"
GIB_BITS = 2**30 * 8


# --- ingest -------------------------------------------------------------------------------


def test_ingest_stores_measurement_transfers_and_nodes(reporter, make_payload):
    body = make_payload(src="lab-1", dst="lab-2", k=11, seconds=8.0, failed=1)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    stored = Measurement.objects.get(uuid=body["uuid"])
    assert (stored.src.name, stored.dst.name) == ("lab-1", "lab-2")
    assert stored.transfers.count() == 11
    assert stored.transfer_count == 11
    assert Transfer.objects.get(measurement=stored, index=0).error_class == "timeout"
    assert set(Node.objects.values_list("name", flat=True)) == {"lab-1", "lab-2"}
    assert response.json()["uuid"] == body["uuid"]


def test_server_recomputes_derived_figures(reporter, make_payload):
    body = make_payload(k=11, seconds=8.0, failed=1)
    data = reporter.post(URL, body, format="json").json()
    # 10 successful transfers of 1 GiB, each 8 s; successes start 0.1 s apart.
    assert data["throughput_gbps"] == pytest.approx(10 * GIB_BITS / 8.0 / 1e9)
    assert data["makespan_gbps"] == pytest.approx(10 * GIB_BITS / (0.9 + 8.0) / 1e9)
    assert (data["succeeded"], data["failed"]) == (10, 1)


def test_all_failed_has_no_throughput(reporter, make_payload):
    data = reporter.post(URL, make_payload(k=3, failed=3), format="json").json()
    assert (data["throughput_gbps"], data["makespan_gbps"]) == (None, None)
    assert (data["succeeded"], data["failed"]) == (0, 3)


def test_same_payload_twice_is_200_and_creates_nothing(reporter, make_payload):
    body = make_payload()
    assert reporter.post(URL, body, format="json").status_code == 201
    again = reporter.post(URL, body, format="json")
    assert again.status_code == 200
    assert again.json()["uuid"] == body["uuid"]
    assert Measurement.objects.count() == 1 and Transfer.objects.count() == 11


def test_client_figures_do_not_make_a_different_payload(reporter, make_payload):
    body = make_payload()
    reporter.post(URL, body, format="json")
    body["throughput_gbps"] = 1.0
    assert reporter.post(URL, body, format="json").status_code == 200


def test_different_payload_same_uuid_is_409(reporter, make_payload):
    body = make_payload()
    reporter.post(URL, body, format="json")
    body["transfers"][0]["bytes"] = 1
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 409
    assert "uuid" in response.json()
    assert Transfer.objects.get(index=0).bytes == 2**30


def test_unknown_campaign_is_created_on_first_sight(reporter, make_payload):
    campaign = str(uuid_lib.uuid4())
    reporter.post(URL, make_payload(campaign=campaign), format="json")
    reporter.post(URL, make_payload(campaign=campaign, src="node-b", dst="node-a"), format="json")
    stored = Campaign.objects.get(uuid=campaign)
    assert (stored.state, stored.trigger) == ("running", "cli")
    assert stored.measurements.count() == 2


def test_nodes_last_seen_moves_forward(reporter, make_payload):
    reporter.post(URL, make_payload(), format="json")
    first = Node.objects.get(name="node-a").last_seen
    reporter.post(URL, make_payload(), format="json")
    node = Node.objects.get(name="node-a")
    assert node.last_seen > first and node.first_seen <= first


# --- validation ---------------------------------------------------------------------------


def _mutations():
    def transfer(field, value):
        def apply(body):
            body["transfers"][0][field] = value

        return apply

    def top(field, value):
        def apply(body):
            body[field] = value

        return apply

    def end_before_start(body):
        body["transfers"][0]["end"] = body["transfers"][0]["start"]
        body["transfers"][0]["start"] = timezone.now().isoformat()

    def finished_before_started(body):
        body["finished"] = "2000-01-01T00:00:00Z"

    def same_pair(body):
        body["dst"] = body["src"]

    def duplicate_index(body):
        body["transfers"][1]["index"] = 0

    def no_transfers(body):
        body["transfers"] = []

    def drop(field):
        def apply(body):
            del body[field]

        return apply

    return [
        ("streams", top("streams", "eight")),
        ("streams", top("streams", "8")),
        ("streams", top("streams", 0)),
        ("streams", top("streams", True)),
        ("file_size", top("file_size", -1)),
        ("file_size", top("file_size", 1.5)),
        ("protocol", top("protocol", "ftp")),
        ("uuid", top("uuid", "not-a-uuid")),
        ("campaign", top("campaign", "nope")),
        ("rtt_ms", top("rtt_ms", -3)),
        ("rtt_ms", top("rtt_ms", "fast")),
        ("started", top("started", "yesterday")),
        ("started", top("started", "0001-01-01T00:00:00+05:00")),
        ("src", top("src", "")),
        ("src", top("src", "a/b")),
        ("finished", finished_before_started),
        ("dst", same_pair),
        ("dst", drop("dst")),
        ("transfers", duplicate_index),
        ("transfers", no_transfers),
        ("transfers", top("transfers", "many")),
        ("transfers.end", end_before_start),
        ("transfers.bytes", transfer("bytes", -5)),
        ("transfers.outcome", transfer("outcome", "meh")),
        ("transfers.error_class", transfer("error_class", "gremlins")),
        ("transfers.error_class", transfer("error_class", "timeout")),  # on a success
        ("transfers.index", transfer("index", "first")),
        ("transfers.start", transfer("start", 12)),
    ]


@pytest.mark.parametrize(
    ("field", "mutate"), _mutations(), ids=[f"{f}-{i}" for i, (f, _) in enumerate(_mutations())]
)
def test_malformed_payload_is_400_naming_the_field(reporter, make_payload, field, mutate):
    body = make_payload(failed=0)
    mutate(body)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()
    top, _, nested = field.partition(".")
    assert top in errors, errors
    if nested:
        items = errors[top].values() if isinstance(errors[top], dict) else errors[top]
        assert any(nested in item for item in items if isinstance(item, dict)), errors
    assert Measurement.objects.count() == 0


def test_non_object_json_is_400(reporter):
    assert reporter.post(URL, "12", content_type="application/json").status_code == 400
    assert reporter.post(URL, "{oops", content_type="application/json").status_code == 400


# --- bulk ---------------------------------------------------------------------------------


def test_bulk_form_reports_each_item(reporter, make_payload):
    existing = make_payload()
    reporter.post(URL, existing, format="json")
    conflicting = dict(existing, rtt_ms=99.0)
    bad = make_payload(protocol="ftp")
    fresh = [make_payload(src="x", dst="y"), make_payload(src="y", dst="x")]
    response = reporter.post(URL, [fresh[0], existing, bad, conflicting, fresh[1]], format="json")
    assert response.status_code == 207
    body = response.json()
    assert [r["status"] for r in body["results"]] == [201, 200, 400, 409, 201]
    assert "protocol" in body["results"][2]["errors"]
    assert (body["created"], body["unchanged"], body["rejected"]) == (2, 1, 2)
    assert Measurement.objects.count() == 3  # nothing valid was lost


def test_bulk_all_good_is_201_and_repeat_is_200(reporter, make_payload):
    items = [make_payload(), make_payload(src="c", dst="d")]
    assert reporter.post(URL, items, format="json").status_code == 201
    assert reporter.post(URL, items, format="json").status_code == 200
    assert Measurement.objects.count() == 2


def test_bulk_all_bad_is_400(reporter):
    response = reporter.post(URL, [{"uuid": 1}, "x"], format="json")
    assert response.status_code == 400
    assert [r["status"] for r in response.json()["results"]] == [400, 400]


# --- concurrent ingests and limits --------------------------------------------------------


def test_ingest_race_falls_back_to_one_transaction_per_measurement(reporter, make_payload):
    """A uuid stored by a concurrent ingest after our lookup: the others still go in."""
    from webapp.results.api.ingest_serializers import MeasurementInSerializer
    from webapp.results.services import measurements as services
    from webapp.results.services.nodes import nodes_ensure

    def validated(body):
        serializer = MeasurementInSerializer(data=body)
        assert serializer.is_valid(), serializer.errors
        return serializer.validated_data

    raced, fresh = make_payload(), make_payload(src="r", dst="s")
    changed = make_payload(src="t", dst="u")
    reporter.post(URL, raced, format="json")
    reporter.post(URL, changed, format="json")
    other = dict(changed, rtt_ms=1.0)
    payloads = [validated(raced), validated(fresh), validated(other)]
    nodes = nodes_ensure(names=["node-a", "node-b", "r", "s", "t", "u"])
    rows = {
        p["uuid"]: services._build(
            payload=p, fingerprint=services.payload_fingerprint(p), nodes=nodes, campaigns={}
        )
        for p in payloads
    }
    stored: dict = {}
    created = services._insert_all_or_each(rows, stored)
    assert created == {payloads[1]["uuid"]}
    assert stored[payloads[0]["uuid"]].transfers.count() == 11
    assert isinstance(stored[payloads[2]["uuid"]], services.MeasurementConflict)
    assert Measurement.objects.count() == 3 and Transfer.objects.count() == 33


def test_offsets_postgresql_cannot_store_are_converted_to_utc(reporter, make_payload):
    body = make_payload()
    body["started"] = "2026-11-21T01:00:00-19:10"  # PostgreSQL allows at most +-15:59
    body["finished"] = "2026-11-21T20:15:00Z"
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["started"].startswith("2026-11-21T20:10:00")


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        # Found by schema fuzzing: in UTC this is year 0, which nothing could read back.
        ("/api/v1/prelim-runs/", {"started": "0001-01-01T00:01:01.0+03:04"}, "started"),
        (URL, {"started": "0001-01-01T12:00:00Z"}, "started"),
        (URL, {"finished": "9999-12-31T00:00:00Z"}, "finished"),
        ("/api/v1/baselines/", {"finished": "9999-12-31T20:00:00-05:00"}, "finished"),
    ],
)
def test_moments_on_the_first_or_last_day_python_has_are_400(reporter, url, body, field):
    sent = prelim_run() if "prelim" in url else baseline() if "baselines" in url else payload()
    response = reporter.post(url, {**sent, **body}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert "from 0001-01-02 to 9999-12-30" in response.json()[field][0]
    schema = reporter.get("/api/schema/?format=json").json()["components"]["schemas"]
    assert schema["MeasurementInRequest"]["properties"]["started"]["pattern"] == (
        "^(?!0001-01-01|9999-12-31)"
    )


@pytest.mark.parametrize("name", ["lab-1", "xrootd.example.org", "10.0.0.7", "::1", "[fd00::2]"])
def test_node_names_may_be_hosts_or_addresses(reporter, make_payload, name):
    response = reporter.post(URL, make_payload(src=name, dst="other"), format="json")
    assert response.status_code == 201, response.content
    assert response.json()["src"] == name


def test_long_error_messages_are_kept(reporter, make_payload):
    body = make_payload(failed=1)
    body["transfers"][0]["message"] = "stderr line\n" * 5000  # 60 kB of tool output
    assert reporter.post(URL, body, format="json").status_code == 201
    assert len(Transfer.objects.get(index=0).message) == 60000


def test_bulk_form_is_bounded(reporter, make_payload):
    from webapp.results.api.views import MAX_BULK

    body = [make_payload()] * (MAX_BULK + 1)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400 and "non_field_errors" in response.json()
    assert Measurement.objects.count() == 0

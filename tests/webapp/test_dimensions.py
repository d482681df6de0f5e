"""Authorization (x509 | token) and client (native | gfal2): dimensions of a measurement,
stored and read back; and each transfer's phases and streaming rate (issue 12)."""

import pytest

from webapp.results.models import Measurement, Transfer

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"


def test_a_payload_without_the_new_fields_ingests_with_the_defaults(reporter, make_payload):
    body = make_payload()
    assert "auth" not in body and "phases" not in body["transfers"][0]
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["auth"], response.json()["client"]) == ("x509", "native")
    stored = Measurement.objects.get(uuid=body["uuid"])
    assert (stored.auth, stored.client) == ("x509", "native")
    transfer = stored.transfers.get(index=0)
    assert transfer.phases == {} and transfer.streaming_gbps is None
    assert reporter.post(URL, body, format="json").status_code == 200  # a retry


def test_the_new_fields_are_stored_and_returned_in_phase_order(reporter, make_payload):
    body = make_payload(auth="token", client="gfal2", phases=True, seconds=8.0, failed=1, k=3)
    # Sent in another order than they happen: the API answers in theirs.
    body["transfers"][1]["phases"] = dict(reversed(body["transfers"][1]["phases"].items()))
    assert reporter.post(URL, body, format="json").status_code == 201
    detail = reporter.get(f"{URL}{body['uuid']}/").json()
    assert (detail["auth"], detail["client"]) == ("token", "gfal2")
    failed, ok = detail["transfers"][0], detail["transfers"][1]
    assert failed["phases"] == {"connect": 8.0} and failed["streaming_gbps"] is None
    assert list(ok["phases"]) == ["connect", "handshake", "request", "streaming"]
    assert ok["phases"]["streaming"] == pytest.approx(7.2)
    assert ok["streaming_gbps"] == pytest.approx(2**30 * 8 / 7.2 / 1e9)
    listed = reporter.get(URL, {"expand": "transfers"}).json()["results"][0]
    assert listed["auth"] == "token" and listed["transfers"][2]["phases"] == ok["phases"]
    assert Transfer.objects.filter(streaming_gbps__isnull=False).count() == 2


def test_a_retry_is_200_and_a_change_of_a_new_field_is_409(reporter, make_payload):
    body = make_payload(auth="token", client="gfal2", phases=True)
    assert reporter.post(URL, body, format="json").status_code == 201
    assert reporter.post(URL, body, format="json").status_code == 200
    for change in (
        {"auth": "x509"},
        {"client": "native"},
    ):
        assert reporter.post(URL, {**body, **change}, format="json").status_code == 409, change
    changed = [{**t} for t in body["transfers"]]
    changed[0]["phases"] = {**changed[0]["phases"], "close": 0.001}
    response = reporter.post(URL, {**body, "transfers": changed}, format="json")
    assert response.status_code == 409
    changed = [{**t} for t in body["transfers"]]
    changed[0]["streaming_gbps"] = 1.0
    assert reporter.post(URL, {**body, "transfers": changed}, format="json").status_code == 409


def test_defaults_sent_explicitly_are_the_same_payload_as_none_sent(reporter, make_payload):
    body = make_payload()
    assert reporter.post(URL, body, format="json").status_code == 201
    explicit = {**body, "auth": "x509", "client": "native"}
    explicit["transfers"] = [{**t, "phases": {}, "streaming_gbps": None} for t in body["transfers"]]
    assert reporter.post(URL, explicit, format="json").status_code == 200


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"auth": "kerberos"}, "auth"),
        ({"auth": None}, "auth"),
        ({"client": "fts"}, "client"),
        ({"client": 1}, "client"),
    ],
)
def test_an_unknown_dimension_is_400_naming_it(reporter, make_payload, change, field):
    response = reporter.post(URL, {**make_payload(), **change}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert not Measurement.objects.exists()


@pytest.mark.parametrize(
    ("transfer", "field", "words"),
    [
        ({"phases": {"connect": -0.1}}, "phases", "greater than or equal to 0"),
        ({"phases": {"connect": "0.1"}}, "phases", "valid number"),
        ({"phases": {"connect": True}}, "phases", "valid number"),
        ({"phases": {"connect": None}}, "phases", "null"),
        ({"phases": [["connect", 0.1]]}, "phases", "dictionary"),
        ({"phases": {"Connect Time": 0.1}}, "phases", "Phase names"),
        ({"phases": {"connect": 5.0, "streaming": 3.7}}, "phases", "more than the transfer's"),
        ({"streaming_gbps": -1.0}, "streaming_gbps", "greater than or equal to 0"),
        ({"streaming_gbps": "fast"}, "streaming_gbps", "valid number"),
    ],
)
def test_a_bad_phase_or_rate_is_400_naming_it(reporter, make_payload, transfer, field, words):
    body = make_payload(k=2, seconds=8.0)
    body["transfers"][1].update(transfer)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400
    errors = response.json()["transfers"]  # by the index of the transfer in the list
    assert list(errors) == ["1"] and list(errors["1"]) == [field]
    assert words in str(errors["1"][field])
    assert not Measurement.objects.exists()


def test_phases_may_exceed_the_duration_by_rounding_only(reporter, make_payload):
    body = make_payload(k=2, seconds=8.0)
    body["transfers"][0]["phases"] = {"connect": 0.4, "streaming": 8.0}  # 5% over
    body["transfers"][1]["phases"] = {"connect": 8.0, "close": 0.01}  # the absolute slack
    assert reporter.post(URL, body, format="json").status_code == 201


def test_bulk_ingest_keeps_the_new_fields(reporter, make_payload):
    items = [
        make_payload(src="a", dst="b", auth="token", phases=True),
        make_payload(src="b", dst="a"),
    ]
    response = reporter.post(URL, items, format="json")
    assert response.json()["created"] == 2
    assert set(Measurement.objects.values_list("auth", "client")) == {
        ("token", "native"),
        ("x509", "native"),
    }
    assert Transfer.objects.exclude(phases={}).count() == 11


def test_the_measurement_list_filters_on_auth_and_client(anonymous, ingest):
    ingest(src="a", dst="b")
    token = ingest(src="a", dst="b", auth="token")
    both = ingest(src="a", dst="b", auth="token", client="gfal2")
    found = anonymous.get(URL, {"auth": "token"}).json()["results"]
    assert {m["uuid"] for m in found} == {token["uuid"], both["uuid"]}
    found = anonymous.get(URL, {"auth": "token", "client": "gfal2"}).json()["results"]
    assert [m["uuid"] for m in found] == [both["uuid"]]
    assert anonymous.get(URL, {"client": "native"}).json()["count"] == 2
    response = anonymous.get(URL, {"auth": "kerberos"})
    assert response.status_code == 400 and list(response.json()) == ["auth"]
    csv = anonymous.get(URL, {"client": "gfal2", "format": "csv", "rows": "transfers"})
    header, first = b"".join(csv.streaming_content).decode().splitlines()[:2]
    columns = header.split(",")  # issue 23's columns after these
    before_sites = columns[: columns.index("source_server")]
    assert before_sites[-5:] == ["auth", "client", "phases", "streaming_gbps", "checksum"]
    cut = len(before_sites)
    assert first.split(",")[cut - 5 : cut] == ["token", "gfal2", "{}", "", "none"]
    assert first.split(",")[cut:] == ["", "", "0"]  # no servers learned, no redirects


def mesh(ingest, campaign=None, **dimensions) -> None:
    """a -> b and b -> a, 8 streams: a 1 Gbps measurement of the given dimensions (and a
    10 Gbps one of the defaults)."""
    for src, dst in (("a", "b"), ("b", "a")):
        ingest(src=src, dst=dst, k=1, seconds=2**30 * 8 / 10e9, campaign=campaign)
        ingest(src=src, dst=dst, k=1, seconds=2**30 * 8 / 1e9, campaign=campaign, **dimensions)


def value(grid: dict) -> float:
    return grid["grid"][0][1][0]["value_gbps"]


@pytest.mark.parametrize("window", ["20d", "latest"])
def test_maddash_shows_one_auth_and_client_at_a_time(anonymous, reporter, ingest, window):
    campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    mesh(ingest, campaign, auth="token", client="gfal2")
    default = anonymous.get("/maddash/grids/https", {"window": window}).json()
    assert (default["auth"], default["client"]) == ("x509", "native")
    assert value(default) == pytest.approx(10.0)
    chosen = anonymous.get(
        "/maddash/grids/https", {"window": window, "auth": "token", "client": "gfal2"}
    ).json()
    assert (chosen["auth"], chosen["client"]) == ("token", "gfal2")
    assert value(chosen) == pytest.approx(1.0)
    assert (
        chosen["grid"][0][1][0]["uri"]
        == "/maddash/grids/https/a/b/8%20streams?auth=token&client=gfal2"
    )
    assert default["grid"][0][1][0]["uri"] == "/maddash/grids/https/a/b/8%20streams"
    # Neither token alone nor gfal2 alone was measured: nothing to show.
    alone = anonymous.get("/maddash/grids/https", {"window": window, "auth": "token"}).json()
    assert alone["grid"][0][1][0]["measurements"] == 0
    row = anonymous.get(
        "/maddash/grids/https/a", {"window": window, "auth": "token", "client": "gfal2"}
    )
    assert row.json()["cells"][0]["checks"][0]["value_gbps"] == pytest.approx(1.0)
    cell = anonymous.get(
        "/maddash/grids/https/a/b", {"window": window, "client": "gfal2", "auth": "token"}
    )
    assert cell.json()["checks"][0]["value_gbps"] == pytest.approx(1.0)


def test_a_maddash_check_and_the_grid_list_take_the_dimensions(anonymous, ingest):
    mesh(ingest, auth="token")
    check = "/maddash/grids/https/a/b/8%20streams"
    assert anonymous.get(check).json()["history"][0]["returnParams"]["Average"] == pytest.approx(
        10.0
    )
    chosen = anonymous.get(check, {"auth": "token"}).json()
    assert len(chosen["history"]) == 1 and chosen["auth"] == "token"
    assert chosen["history"][0]["returnParams"]["Average"] == pytest.approx(1.0)
    assert chosen["uri"].endswith("?auth=token")
    assert chosen["description"].endswith("a to b (token, native)")
    grids = anonymous.get("/maddash/grids/", {"auth": "token"}).json()["grids"]
    assert grids == [{"name": "https", "uri": "/maddash/grids/https?auth=token"}]
    assert anonymous.get("/maddash/grids/", {"client": "gfal2"}).json()["grids"] == []
    assert anonymous.get("/maddash/grids/https", {"client": "fts"}).status_code == 400


def test_the_aggregates_take_the_dimensions(anonymous, ingest):
    mesh(ingest, auth="token", client="gfal2")
    ingest(
        src="a", dst="b", streams=1, k=1, seconds=2**30 * 8 / 0.5e9, auth="token", client="gfal2"
    )
    latency = "/api/v1/throughput-vs-latency/"
    points = anonymous.get(latency, {"window": "20d"}).json()["points"]
    assert [p["throughput_gbps"] for p in points] == pytest.approx([10.0, 10.0])
    dims = {"window": "20d", "auth": "token", "client": "gfal2"}
    answer = anonymous.get(latency, {**dims, "streams": 8}).json()
    assert [p["throughput_gbps"] for p in answer["points"]] == pytest.approx([1.0, 1.0])
    assert (answer["auth"], answer["client"]) == ("token", "gfal2")
    streams = anonymous.get("/api/v1/stream-comparison/", dims).json()
    assert streams["pairs"][0]["ratio"] == pytest.approx(2.0)
    assert (
        anonymous.get("/api/v1/stream-comparison/", {"window": "20d"}).json()["pairs"][0]["ratio"]
        is None
    )

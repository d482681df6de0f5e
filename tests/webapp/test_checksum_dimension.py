"""The checksum dimension (none | adler32) through the API: stored, validated, returned and
filtered like auth and client; the checksum phase and the checksum-mismatch error class
(issue 22)."""

import pytest

from webapp.results.models import Measurement, Transfer

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"
GBIT = 2**30 * 8 / 1e9  # seconds a 1 GiB transfer takes at 1 Gbps


def test_a_payload_without_checksum_ingests_as_none(reporter, make_payload):
    body = make_payload()
    assert "checksum" not in body  # what orchestrators before issue 22 send
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["checksum"] == "none"
    assert Measurement.objects.get(uuid=body["uuid"]).checksum == "none"
    assert reporter.post(URL, body, format="json").status_code == 200  # a retry
    # The default sent explicitly is the same payload (its stored sum did not change).
    assert reporter.post(URL, {**body, "checksum": "none"}, format="json").status_code == 200


def test_adler32_is_stored_and_returned_with_its_phase_last(reporter, checksum_payload):
    body = checksum_payload(k=2, seconds=8.0, checksum_s=0.5)
    phases = body["transfers"][1]["phases"]
    phases["authorize"] = 0.1
    phases["connect"] -= 0.1
    # Sent in another order than they happen: the API answers in theirs.
    body["transfers"][1]["phases"] = dict(reversed(phases.items()))
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["checksum"] == "adler32"
    detail = reporter.get(f"{URL}{body['uuid']}/").json()
    assert detail["checksum"] == "adler32"
    shown = detail["transfers"][1]["phases"]
    assert list(shown) == [
        "authorize", "connect", "handshake", "request", "streaming", "checksum",
    ]  # fmt: skip
    assert shown["checksum"] == pytest.approx(0.5)
    assert Measurement.objects.get(uuid=body["uuid"]).checksum == "adler32"


def test_a_change_of_the_checksum_is_409(reporter, checksum_payload):
    body = checksum_payload()
    assert reporter.post(URL, body, format="json").status_code == 201
    assert reporter.post(URL, body, format="json").status_code == 200
    response = reporter.post(URL, {**body, "checksum": "none"}, format="json")
    assert response.status_code == 409 and "new uuid" in response.json()["uuid"][0]
    without = {k: v for k, v in body.items() if k != "checksum"}  # absent means none
    assert reporter.post(URL, without, format="json").status_code == 409


@pytest.mark.parametrize("value", ["md5", "ADLER32", "", None, 32, ["adler32"]])
def test_a_bad_checksum_is_400_naming_it(reporter, make_payload, value):
    response = reporter.post(URL, {**make_payload(), "checksum": value}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["checksum"]
    assert not Measurement.objects.exists()


def test_the_bulk_form_takes_the_checksum_per_item(reporter, make_payload, checksum_payload):
    items = [checksum_payload(src="a", dst="b"), make_payload(src="b", dst="a")]
    items.append({**make_payload(src="c", dst="a"), "checksum": "crc32"})
    answer = reporter.post(URL, items, format="json")
    assert answer.status_code == 207
    body = answer.json()
    assert (body["created"], body["rejected"]) == (2, 1)
    assert list(body["results"][2]["errors"]) == ["checksum"]
    assert sorted(Measurement.objects.values_list("checksum", flat=True)) == ["adler32", "none"]


def test_checksum_mismatch_is_an_error_class_of_its_own(reporter, checksum_payload):
    body = checksum_payload(k=3, failed=1, error_class="checksum-mismatch")
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["succeeded"], response.json()["failed"]) == (2, 1)
    failed = Transfer.objects.get(measurement__uuid=body["uuid"], index=0)
    assert (failed.outcome, failed.error_class) == ("failure", "checksum-mismatch")
    assert failed.get_error_class_display() == "Checksum mismatch"
    assert "checksum" in failed.phases and failed.bytes == body["file_size"]
    csv = reporter.get(URL, {"format": "csv", "rows": "transfers", "checksum": "adler32"})
    text = b"".join(csv.streaming_content).decode()
    assert ",failure,checksum-mismatch,checksum-mismatch talking to node-b," in text


@pytest.mark.parametrize(
    ("transfer", "words"),
    [
        ({"error_class": "checksum"}, "not a valid choice"),
        ({"outcome": "success", "error_class": "checksum-mismatch"}, "no error_class"),
    ],
)
def test_a_wrong_checksum_error_class_is_400(reporter, checksum_payload, transfer, words):
    body = checksum_payload(k=2, failed=1, error_class="checksum-mismatch")
    body["transfers"][0].update(transfer)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400
    errors = response.json()["transfers"]["0"]
    assert list(errors) == ["error_class"] and words in str(errors["error_class"])
    assert not Measurement.objects.exists()


def test_the_measurement_list_filters_on_checksum(anonymous, ingest, ingest_checksum):
    plain = ingest(src="a", dst="b")
    summed = ingest_checksum(src="a", dst="b")
    both = ingest_checksum(src="a", dst="b", auth="token")
    found = anonymous.get(URL, {"checksum": "adler32"}).json()
    assert {m["uuid"] for m in found["results"]} == {summed["uuid"], both["uuid"]}
    assert {m["checksum"] for m in found["results"]} == {"adler32"}
    found = anonymous.get(URL, {"checksum": "none"}).json()["results"]
    assert [m["uuid"] for m in found] == [plain["uuid"]]
    found = anonymous.get(URL, {"checksum": "adler32", "auth": "token"}).json()["results"]
    assert [m["uuid"] for m in found] == [both["uuid"]]
    assert anonymous.get(URL).json()["count"] == 3  # no filter: every checksum
    response = anonymous.get(URL, {"checksum": "md5"})
    assert response.status_code == 400 and list(response.json()) == ["checksum"]
    csv = anonymous.get(URL, {"format": "csv", "checksum": "adler32"})
    header, *rows = b"".join(csv.streaming_content).decode().splitlines()
    columns = header.split(",")  # newer columns last: checksum after tcp_buffer_bytes
    assert columns[columns.index("tcp_buffer_bytes") + 1] == "checksum"
    at = columns.index("checksum")
    assert len(rows) == 2 and {row.split(",")[at] for row in rows} == {"adler32"}


def mesh(ingest, ingest_checksum) -> None:
    """a -> b and b -> a at 8 streams: 10 Gbps without a checksum step, 2 Gbps with one; and
    a -> b at 1 stream with one, 1 Gbps."""
    for src, dst in (("a", "b"), ("b", "a")):
        ingest(src=src, dst=dst, k=1, seconds=GBIT / 10)
        ingest_checksum(src=src, dst=dst, k=1, seconds=GBIT / 2)
    ingest_checksum(src="a", dst="b", k=1, streams=1, seconds=GBIT)


def test_the_aggregates_read_no_checksum_unless_asked(anonymous, ingest, ingest_checksum):
    mesh(ingest, ingest_checksum)
    latency = "/api/v1/throughput-vs-latency/"
    default = anonymous.get(latency, {"window": "20d", "streams": 8}).json()
    assert default["checksum"] == "none"
    assert [p["throughput_gbps"] for p in default["points"]] == pytest.approx([10.0, 10.0])
    chosen = anonymous.get(latency, {"window": "20d", "streams": 8, "checksum": "adler32"})
    assert chosen.json()["checksum"] == "adler32"
    assert [p["throughput_gbps"] for p in chosen.json()["points"]] == pytest.approx([2.0, 2.0])
    streams = "/api/v1/stream-comparison/"
    assert anonymous.get(streams, {"window": "20d"}).json()["pairs"][0]["ratio"] is None
    pair = anonymous.get(streams, {"window": "20d", "checksum": "adler32"}).json()["pairs"][0]
    assert pair["ratio"] == pytest.approx(2.0)
    for url in (latency, streams):
        response = anonymous.get(url, {"checksum": "sha1"})
        assert response.status_code == 400 and list(response.json()) == ["checksum"]


def test_maddash_reads_one_checksum_at_a_time(anonymous, ingest, ingest_checksum):
    mesh(ingest, ingest_checksum)
    grid = "/maddash/grids/https"
    default = anonymous.get(grid, {"window": "20d"}).json()
    assert default["checksum"] == "none"
    assert default["grid"][0][1][0]["value_gbps"] == pytest.approx(10.0)
    assert default["grid"][0][1][0]["uri"] == "/maddash/grids/https/a/b/8%20streams"
    chosen = anonymous.get(grid, {"window": "20d", "checksum": "adler32"}).json()
    assert chosen["checksum"] == "adler32"
    assert chosen["checkNames"] == ["8 streams", "1 stream"]
    assert chosen["grid"][0][1][0]["value_gbps"] == pytest.approx(2.0)
    assert chosen["grid"][0][1][0]["uri"] == "/maddash/grids/https/a/b/8%20streams?checksum=adler32"
    assert chosen["rows"][0]["uri"] == "/maddash/grids/https/a?checksum=adler32"
    check = anonymous.get(
        "/maddash/grids/https/a/b/8%20streams", {"checksum": "adler32", "auth": "x509"}
    ).json()
    assert check["checksum"] == "adler32"
    assert check["description"].endswith("a to b (x509, native, adler32)")
    assert check["history"][0]["returnParams"]["Average"] == pytest.approx(2.0)
    grids = anonymous.get("/maddash/grids/", {"checksum": "adler32"}).json()["grids"]
    assert grids == [{"name": "https", "uri": "/maddash/grids/https?checksum=adler32"}]
    assert anonymous.get(grid, {"checksum": "md5"}).status_code == 400

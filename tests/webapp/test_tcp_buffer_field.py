"""A measurement's TCP buffer maximum (`tcp_buffer_bytes`): taken when the orchestrator
knows it, refused outside 4096..2**40 with a 400 naming it, stored, returned by the API (JSON
and CSV) and described by the OpenAPI schema."""

import csv
import io

import pytest

from webapp.results.models import Measurement

pytestmark = pytest.mark.django_db
URL = "/api/v1/measurements/"
MIB = 2**20


@pytest.fixture
def post(reporter, make_payload):
    """POST a payload with extra top-level keys; returns (body, response)."""

    def send(extra: dict | None = None, **kwargs):
        body = {**make_payload(**kwargs), **(extra or {})}
        return body, reporter.post(URL, body, format="json")

    return send


def test_a_known_buffer_is_stored_and_returned(post, anonymous):
    body, response = post({"tcp_buffer_bytes": 32 * MIB})
    assert response.status_code == 201, response.content
    assert response.json()["tcp_buffer_bytes"] == 32 * MIB
    assert Measurement.objects.get(uuid=body["uuid"]).tcp_buffer_bytes == 32 * MIB
    shown = anonymous.get(f"{URL}{body['uuid']}/").json()
    assert shown["tcp_buffer_bytes"] == 32 * MIB
    (listed,) = anonymous.get(URL).json()["results"]
    assert listed["tcp_buffer_bytes"] == 32 * MIB
    text = b"".join(anonymous.get(URL, {"format": "csv"}).streaming_content).decode()
    (row,) = csv.DictReader(io.StringIO(text))
    # newer columns last: issue 23's after these
    assert text.splitlines()[0].endswith(",tcp_buffer_bytes,checksum,scope,src_site,dst_site,hosts")
    assert row["tcp_buffer_bytes"] == str(32 * MIB)


@pytest.mark.parametrize("extra", [{}, {"tcp_buffer_bytes": None}])
def test_an_unknown_buffer_is_null(post, anonymous, extra):
    body, response = post(extra)
    assert response.status_code == 201, response.content
    assert anonymous.get(f"{URL}{body['uuid']}/").json()["tcp_buffer_bytes"] is None


@pytest.mark.parametrize(
    "value", [4095, 0, -1, 2**40 + 1, "33554432", 33554432.0, 1.5, True, [1], {"max": 1}]
)
def test_a_wrong_buffer_is_a_400_naming_the_field(post, value):
    body, response = post({"tcp_buffer_bytes": value})
    assert response.status_code == 400
    assert list(response.json()) == ["tcp_buffer_bytes"]
    assert not Measurement.objects.filter(uuid=body["uuid"]).exists()


@pytest.mark.parametrize("value", [4096, 2**40])
def test_the_bounds_are_taken(post, value):
    _, response = post({"tcp_buffer_bytes": value})
    assert response.status_code == 201, response.content


def test_a_retry_is_recognised_and_a_changed_buffer_conflicts(post, reporter):
    body, response = post({"tcp_buffer_bytes": 4 * MIB})
    assert response.status_code == 201
    assert reporter.post(URL, body, format="json").status_code == 200
    changed = {**body, "tcp_buffer_bytes": 8 * MIB}
    assert reporter.post(URL, changed, format="json").status_code == 409
    unknown = {**body, "tcp_buffer_bytes": None}
    assert reporter.post(URL, unknown, format="json").status_code == 409


def test_an_explicit_null_is_the_payload_without_it(post, reporter):
    body, response = post()
    assert response.status_code == 201
    assert reporter.post(URL, {**body, "tcp_buffer_bytes": None}, format="json").status_code == 200


def test_the_schema_says_what_it_is(anonymous):
    schema = anonymous.get("/api/schema/?format=json").json()["components"]["schemas"]
    sent = schema["MeasurementInRequest"]["properties"]["tcp_buffer_bytes"]
    assert (sent["minimum"], sent["maximum"], sent.get("nullable")) == (4096, 2**40, True)
    assert "tcp_wmem" in sent["description"] and "RTT" in sent["description"]
    shown = schema["Measurement"]["properties"]["tcp_buffer_bytes"]
    assert shown.get("nullable") and "tcp_rmem" in shown["description"]

"""Schemathesis against /api/schema/ through the WSGI app: no generated request gets a 500."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from webapp.results import reporters
from webapp.tpcbench_web.wsgi import application

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


def test_schema_is_openapi_3_and_names_the_design_endpoints(client):
    document = client.get("/api/schema/?format=json").json()
    assert document["openapi"].startswith("3.")
    for path in (
        "/api/v1/measurements/",
        "/api/v1/nodes/",
        "/api/v1/campaigns/",
        "/api/v1/throughput-vs-latency/",
        "/api/v1/stream-comparison/",
        "/maddash/grids/{name}",
    ):
        assert any(p.rstrip("/") == path.rstrip("/") for p in document["paths"]), path


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_server_errors(case):
    token = reporters.api_token_create(name="schemathesis")
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=[not_a_server_error])


def test_ingest_request_documents_one_measurement_or_a_list(client):
    document = client.get("/api/schema/?format=json").json()
    body = document["paths"]["/api/v1/measurements/"]["post"]["requestBody"]["content"]
    assert list(body) == ["application/json"]
    ingest = document["components"]["schemas"]["MeasurementIngestRequest"]
    assert [s.get("type", "$ref") for s in ingest["oneOf"]] == ["$ref", "array"]

"""One contract between the orchestrator and the webapp: the webapp's OpenAPI schema. What
the orchestrator really sends (its own record classes, not hand-written copies) is validated
against the request bodies the schema declares, strictly: a key the schema does not name is
an error, so a renamed or misspelled field on either side fails here rather than being
dropped in silence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import pytest

from orchestrator.campaign.journal import campaign_payload
from orchestrator.campaign.rtt_check import RttCheck
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.prelim.baseline import Baseline
from orchestrator.prelim.sweeps import PrelimRun
from orchestrator.transfers.record import ProgressPoint, TransferRecord, iso

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict[str, Any]:
    from rest_framework.test import APIClient

    with django_db_blocker.unblock():
        return APIClient().get("/api/schema/?format=json").json()


def strict(node: Any, components: dict[str, Any]) -> Any:
    """OpenAPI 3.0 as JSON Schema: $refs inlined, `nullable` as a null type, every object
    closed (additionalProperties false unless the schema says otherwise)."""
    if isinstance(node, list):
        return [strict(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return strict(components[node["$ref"].rsplit("/", 1)[-1]], components)
    out = {k: strict(v, components) for k, v in node.items() if k not in ("nullable", "readOnly")}
    if node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if "oneOf" in out or "allOf" in out:
            out = {"anyOf": [out, {"type": "null"}]}
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def request_schema(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    body = schema["paths"][path][method]["requestBody"]["content"]["application/json"]
    return strict(body["schema"], schema["components"]["schemas"])


def transfer(index: int, ok: bool, start: datetime) -> TransferRecord:
    return TransferRecord(
        index=index, protocol="https", source_url="https://a:8443/src", destination_url="https://b:8443/dst",
        start=0.0, end=2.5, started=start, ended=start + timedelta(seconds=2.5),
        bytes=1 << 30 if ok else 0, outcome="success" if ok else "failure",
        error_class=None if ok else "timeout", message="" if ok else "no progress for 60 s",
        progress=[ProgressPoint(1.0, 1 << 29), ProgressPoint(2.5, 1 << 30)] if ok else [],
        phases={"connect": 0.03, "handshake": 0.01, "request": 0.96, "streaming": 1.5}
        if ok else {"connect": 0.03, "handshake": 2.47},
        first_progress=ProgressPoint(1.0, 0) if ok else None,
    )  # fmt: skip


def test_a_measurement_as_the_orchestrator_sends_it_fits_the_schema(schema) -> None:
    start = datetime(2026, 11, 21, 12, tzinfo=UTC)
    record = MeasurementRecord(
        uuid="6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2b11", campaign=None, src="lab-1", dst="lab-2",
        protocol="https", auth="token", client="gfal2", streams=8, file_size=1 << 30, rtt_ms=12.5,
        started=start, finished=start + timedelta(seconds=3),
        transfers=[transfer(0, True, start), transfer(1, False, start)],
        cleanup_errors=["could not delete /data/x: permission denied"],
    )  # fmt: skip
    sent = record.to_json()
    assert sent["auth"] == "token" and sent["client"] == "gfal2"
    assert sent["transfers"][0]["streaming_gbps"] > 0
    # what a campaign adds (orchestrator/campaign/run.py Campaign._measure_one)
    sent |= {"src_link_gbps": 2.0, "dst_link_gbps": None, "rtt_target_ms": 10.0}
    sent |= {"tcp_buffer_bytes": 32 << 20}
    sent |= {"rtt_within_target": False, "rtt_from": "orchestrator"}
    body = request_schema(schema, "/api/v1/measurements/", "post")
    with pytest.raises(jsonschema.ValidationError, match="rtt_within_target"):
        jsonschema.validate(sent, body)  # the webapp derives it: not part of the contract
    del sent["rtt_within_target"]
    jsonschema.validate(sent, body)
    jsonschema.validate([sent, sent], body)  # the bulk form


def test_a_misspelled_field_breaks_the_contract(schema) -> None:
    start = datetime(2026, 11, 21, 12, tzinfo=UTC)
    record = MeasurementRecord(
        uuid="6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2b12", campaign=None, src="lab-1", dst="lab-2",
        protocol="https", streams=8, file_size=1 << 30, rtt_ms=None, started=start,
        finished=start, transfers=[transfer(0, True, start)],
    )  # fmt: skip
    sent = {**record.to_json(), "rtt_target": 10.0}
    with pytest.raises(jsonschema.ValidationError, match="rtt_target"):
        jsonschema.validate(sent, request_schema(schema, "/api/v1/measurements/", "post"))


def test_a_baseline_and_a_prelim_run_fit_the_schema(schema) -> None:
    measured = Baseline("lab-1", "lab-2", 8, 10, campaign=None, finished=iso(datetime.now(UTC)))
    measured.throughput_gbps = 1.9
    jsonschema.validate(measured.to_json(), request_schema(schema, "/api/v1/baselines/", "post"))
    failed = Baseline("lab-1", "lab-2", 8, 10, error="iperf3: unable to connect")
    jsonschema.validate(failed.to_json(), request_schema(schema, "/api/v1/baselines/", "post"))
    run = PrelimRun("concurrency", "lab-1", 1, finished=iso(datetime.now(UTC)))
    run.points = [
        {"method": "cp", "file_size": 1 << 30, "concurrency": 1, "throughput_gbps": 9.5,
         "makespan_gbps": 9.4, "succeeded": 1, "failed": 0, "error": ""},
    ]  # fmt: skip
    jsonschema.validate(run.to_json(), request_schema(schema, "/api/v1/prelim-runs/", "post"))


def test_a_campaign_report_fits_the_schema(schema) -> None:
    journal = {
        "uuid": "6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2b13", "state": "finished", "trigger": "cli",
        "schedule": "", "started": iso(datetime.now(UTC)), "finished": iso(datetime.now(UTC)),
        "protocols": ["https"], "streams": [8], "transfers": 11,
        "rtt_checks": [RttCheck("lab-1", "lab-2", 10.0, 10.4).to_json()],
    }  # fmt: skip
    sent = campaign_payload(journal)
    sent.pop("uuid")  # in the URL: PATCH /api/v1/campaigns/<uuid>/
    body = request_schema(schema, "/api/v1/campaigns/{uuid}/", "patch")
    jsonschema.validate(sent, body)


def test_a_lookup_as_the_orchestrator_sends_it_fits_the_schema_and_is_stored(
    schema, reporter
) -> None:
    from orchestrator.measurement.lookup import LookupRecord, LookupStep

    steps = (
        LookupStep("regional:1094", 0.0401234567),
        LookupStep("a-rdr:1094", 0.03),
        LookupStep("a-2:1094", 0.011),
    )
    record = LookupRecord(
        uuid="6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2b14", protocol="https", entry="regional",
        level="regional", site="a", level_rtt_ms=30.0, started=datetime.now(UTC),
        seconds=0.0811234567, hops=2, steps=steps, data_server="a-2:1094", outcome="success",
        campaign="6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2b15",
    )  # fmt: skip
    body = request_schema(schema, "/api/v1/lookups/", "post")
    jsonschema.validate(record.to_json(), body)
    failed = LookupRecord(
        uuid="6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2b16", protocol="https", entry="global",
        level="global", site="b", level_rtt_ms=None, started=datetime.now(UTC), seconds=None,
        hops=1, steps=steps[:2], data_server=None, outcome="failure", error_class="timeout",
        message="no answer",
    )  # fmt: skip
    jsonschema.validate(failed.to_json(), body)
    with pytest.raises(jsonschema.ValidationError, match="hop"):
        jsonschema.validate({**record.to_json(), "hop": 2}, body)
    for sent in (record, failed):
        response = reporter.post("/api/v1/lookups/", sent.to_json(), format="json")
        assert response.status_code == 201, response.content
        stored = response.json()
        assert (stored["hops"], stored["seconds"]) == (
            sent.hops,
            None if sent.seconds is None else pytest.approx(0.081123),  # the steps' sum
        )


def test_a_sweep_point_as_the_orchestrator_sends_it_is_stored(schema, reporter) -> None:
    """Issue 23: a site-scope measurement with hosts m (and the fronts' one, hosts null)."""
    start = datetime(2026, 11, 21, 12, tzinfo=UTC)
    body = request_schema(schema, "/api/v1/measurements/", "post")
    for n, hosts in enumerate((2, None)):
        record = MeasurementRecord(
            uuid=f"6f1c0f4e-1f7e-4a3c-9a57-0d5c1f0e2c1{n}", campaign=None, src="a-rdr",
            dst="b-rdr", protocol="https", streams=8, file_size=1 << 30, rtt_ms=None,
            started=start, finished=start + timedelta(seconds=3),
            transfers=[transfer(0, True, start)], scope="site", hosts=hosts, src_site="a",
            dst_site="b",
        )  # fmt: skip
        sent = record.to_json()
        jsonschema.validate(sent, body)
        response = reporter.post("/api/v1/measurements/", sent, format="json")
        assert response.status_code == 201, response.content
        assert (response.json()["scope"], response.json()["hosts"]) == ("site", hosts)

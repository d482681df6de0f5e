"""The ingest rules JSON Schema cannot state (one field against another), applied to the
schema-valid requests the fuzzer makes, so that they are valid to the server too: the fuzzing
then gets past validation into the services, and a 400 for such a request is a finding.
Requests made to be invalid are left as they are."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from schemathesis import GenerationMode

from webapp.results.choices import Outcome
from webapp.results.phases import PHASE_NAME


def moment(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def not_before(item: dict, first: str, then: str) -> None:
    """item[then] is item[first] where it was earlier."""
    start, end = moment(item.get(first)), moment(item.get(then))
    if start and end and end < start:
        item[then] = item[first]


def other_end(item: dict) -> None:
    """dst differs from src."""
    if isinstance(item.get("src"), str) and item.get("src") == item.get("dst"):
        item["dst"] = "b" if item["src"] != "b" else "c"


def phase_names(phases: dict) -> dict:
    """Phase names as PHASE_NAME has them (which OpenAPI 3.0 cannot state)."""
    return {
        name if PHASE_NAME.match(name) else f"phase{i}": seconds
        for i, (name, seconds) in enumerate(phases.items())
    }


def transfer(item: dict, index: int) -> None:
    item["index"] = index  # each its own
    if isinstance(item.get("phases"), dict):
        item["phases"] = phase_names(item["phases"])
    not_before(item, "start", "end")
    if item.get("outcome") == Outcome.SUCCESS:
        item["error_class"] = None
    phases, start = item.get("phases"), moment(item.get("start"))
    if isinstance(phases, dict) and phases and start:
        try:  # the end far enough for the phases, else no phases
            item["end"] = max(moment(item["end"]), start + timedelta(seconds=sum(phases.values())))
            item["end"] = item["end"].isoformat()
        except (OverflowError, TypeError):
            item["phases"] = {}


def measurement(item: dict) -> None:
    other_end(item)
    not_before(item, "started", "finished")
    for index, each in enumerate(item.get("transfers") or []):
        transfer(each, index)


def baseline(item: dict) -> None:
    other_end(item)
    not_before(item, "started", "finished")
    if item.get("throughput_gbps") is None and not item.get("error"):
        item["error"] = "no throughput"
    omit, duration = item.get("omit_s"), item.get("duration_s")
    if isinstance(omit, int) and isinstance(duration, int) and omit >= duration >= 1:
        item["omit_s"] = duration - 1  # the slow start left out is part of the test


def prelim_run(item: dict) -> None:
    not_before(item, "started", "finished")
    seen: dict[tuple, dict] = {}
    for point in item.get("points") or []:
        seen.setdefault((point["method"], point["file_size"], point["concurrency"]), point)
    item["points"] = list(seen.values())


def campaign_update(item: dict) -> None:
    not_before(item, "started", "finished")


RULES = {
    ("POST", "/api/v1/measurements/"): measurement,
    ("POST", "/api/v1/baselines/"): baseline,
    ("POST", "/api/v1/prelim-runs/"): prelim_run,
    ("PATCH", "/api/v1/campaigns/{uuid}/"): campaign_update,
}


def satisfy_cross_field_rules(context: Any, case: Any) -> Any:
    """A schemathesis map_case hook."""
    rule = RULES.get((case.method.upper(), case.path))
    if rule is None or case.meta is None or case.meta.generation.mode != GenerationMode.POSITIVE:
        return case
    for item in case.body if isinstance(case.body, list) else [case.body]:
        if isinstance(item, dict):
            rule(item)
    return case

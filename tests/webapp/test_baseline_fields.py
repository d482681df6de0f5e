"""What a link baseline says about how it was taken: the seconds of slow start left out before
the measured ones (`omit_s`) and the sender's retransmits, taken, returned, compared on a
replay, and refused with a 400 naming the field when they cannot be."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from orchestrator.prelim.baseline import Baseline as Measured
from orchestrator.transfers.record import iso
from tests.support.webapp_payloads import baseline
from webapp.results.models import Baseline

pytestmark = pytest.mark.django_db
URL = "/api/v1/baselines/"


def listed(anonymous) -> list[dict]:
    return anonymous.get(f"{URL}?src=node-a&dst=node-b").json()["results"]


def test_omit_and_retransmits_are_stored_and_returned(reporter, anonymous):
    body = baseline(streams=88, duration_s=10, omit_s=2, retransmits=1234)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert (response.json()["omit_s"], response.json()["retransmits"]) == (2, 1234)
    stored = Baseline.objects.get(uuid=body["uuid"])
    assert (stored.omit_s, stored.retransmits, stored.streams) == (2, 1234, 88)
    [shown] = listed(anonymous)
    assert (shown["omit_s"], shown["retransmits"]) == (2, 1234)


def test_an_older_baseline_without_them_reads_as_nothing_left_out_and_not_reported(
    reporter, anonymous
):
    body = baseline()
    assert "omit_s" not in body and "retransmits" not in body
    assert reporter.post(URL, body, format="json").status_code == 201
    [shown] = listed(anonymous)
    assert (shown["omit_s"], shown["retransmits"]) == (0, None)
    # zero retransmits is a figure, not "not reported"
    clean = baseline(dst="node-c", retransmits=0)
    assert reporter.post(URL, clean, format="json").json()["retransmits"] == 0


def test_what_the_orchestrator_sends_is_taken_as_it_is(reporter):
    measured = Measured("lab-1", "lab-2", 88, 10, omit_s=2, retransmits=7)
    measured.throughput_gbps, measured.finished = 0.95, iso(datetime.now(UTC))
    response = reporter.post(URL, measured.to_json(), format="json")
    assert response.status_code == 201, response.content
    answer = response.json()
    assert (answer["streams"], answer["duration_s"], answer["omit_s"], answer["retransmits"]) == (
        88,
        10,
        2,
        7,
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"omit_s": -1}, "omit_s"),
        ({"omit_s": "2"}, "omit_s"),
        ({"omit_s": 2.0}, "omit_s"),
        ({"omit_s": None}, "omit_s"),
        ({"omit_s": 10, "duration_s": 10}, "omit_s"),  # nothing would be left to measure
        ({"omit_s": 86_400, "duration_s": 86_400}, "omit_s"),
        ({"retransmits": -1}, "retransmits"),
        ({"retransmits": 1.5}, "retransmits"),
        ({"retransmits": True}, "retransmits"),
        ({"retransmits": "12"}, "retransmits"),
        ({"retransmits": 2**63}, "retransmits"),  # beyond the column
    ],
)
def test_a_bad_omit_or_retransmits_gets_a_400_naming_it(reporter, change, field):
    response = reporter.post(URL, baseline(**change), format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]
    assert not Baseline.objects.exists()


def test_the_largest_values_fit(reporter):
    body = baseline(omit_s=9, duration_s=10, retransmits=2**63 - 1)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert Baseline.objects.get(uuid=body["uuid"]).retransmits == 2**63 - 1


@pytest.mark.parametrize(("field", "other"), [("omit_s", 1), ("retransmits", 99)])
def test_a_replay_compares_them_too(reporter, field, other):
    body = baseline(omit_s=2, retransmits=12)
    assert reporter.post(URL, body, format="json").status_code == 201
    assert reporter.post(URL, body, format="json").status_code == 200  # the same: a replay
    changed = reporter.post(URL, {**body, field: other}, format="json")
    assert changed.status_code == 409 and "uuid" in changed.json()
    unreported = reporter.post(URL, {**body, "retransmits": None}, format="json")
    assert unreported.status_code == 409
    assert Baseline.objects.get().omit_s == 2 and Baseline.objects.count() == 1


def test_a_replay_of_an_older_baseline_matches_its_defaults(reporter):
    body = baseline()
    assert reporter.post(URL, body, format="json").status_code == 201
    spelled_out = {**body, "omit_s": 0, "retransmits": None}
    assert reporter.post(URL, spelled_out, format="json").status_code == 200

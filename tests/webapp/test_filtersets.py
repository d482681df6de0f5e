"""MeasurementFilterSet and friends, straight on querysets (netbox's test_filtersets style)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.results.filtersets import CampaignFilterSet, MeasurementFilterSet, NodeFilterSet
from webapp.results.models import Campaign, Measurement, Node

pytestmark = pytest.mark.django_db


@pytest.fixture
def measurements(ingest, reporter):
    now = timezone.now()
    campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    ingest(
        src="a",
        dst="b",
        protocol="https",
        streams=8,
        started=now - timedelta(days=3),
        campaign=campaign,
    )
    ingest(src="a", dst="b", protocol="https", streams=1, started=now - timedelta(hours=5))
    ingest(src="b", dst="a", protocol="gridftp", streams=8, started=now - timedelta(hours=2))
    ingest(src="a", dst="c", protocol="root", streams=4, started=now - timedelta(hours=1))
    return {"now": now, "campaign": campaign}


def pairs(params: dict) -> list[tuple[str, str, str, int]]:
    filterset = MeasurementFilterSet(params, Measurement.objects.all())
    assert filterset.is_valid(), filterset.errors
    return sorted((m.src.name, m.dst.name, m.protocol, m.streams) for m in filterset.qs)


def test_src_dst(measurements):
    assert pairs({"src": "a"}) == [
        ("a", "b", "https", 1),
        ("a", "b", "https", 8),
        ("a", "c", "root", 4),
    ]
    assert pairs({"src": "a", "dst": "c"}) == [("a", "c", "root", 4)]
    assert pairs({"dst": "nobody"}) == []


def test_protocol_and_streams(measurements):
    assert pairs({"protocol": "gridftp"}) == [("b", "a", "gridftp", 8)]
    assert pairs({"streams": "8"}) == [("a", "b", "https", 8), ("b", "a", "gridftp", 8)]


def test_since_until(measurements):
    now = measurements["now"]
    assert len(pairs({"since": (now - timedelta(hours=6)).isoformat()})) == 3
    assert pairs({"until": (now - timedelta(days=1)).isoformat()}) == [("a", "b", "https", 8)]
    window = {
        "since": (now - timedelta(hours=3)).isoformat(),
        "until": (now - timedelta(minutes=90)).isoformat(),
    }
    assert pairs(window) == [("b", "a", "gridftp", 8)]


def test_offsets_beyond_postgresql_range_are_converted(measurements):
    # Found by schemathesis: PostgreSQL refuses a -19:10 offset in a literal; UTC it is.
    assert len(pairs({"until": "2552-06-21T08:30:51-19:10"})) == 4


@pytest.mark.parametrize(
    ("params", "found"),
    [
        ({"until": "0001-01-01T00:00:06+07:00"}, 0),  # before year 1 in UTC
        ({"since": "0001-01-01T00:00:00+05:00"}, 4),
        ({"since": "9999-12-31T23:59:59-05:00"}, 0),  # after 9999 in UTC
        ({"until": "9999-12-31T23:59:59-05:00"}, 4),
    ],
)
def test_moments_beyond_python_range_in_utc_filter_as_themselves(measurements, params, found):
    # Found by schemathesis: valid ISO 8601 (and the schema's date-time), once a 400.
    assert len(pairs(params)) == found


def test_campaign(measurements):
    assert pairs({"campaign": measurements["campaign"]}) == [("a", "b", "https", 8)]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"protocol": "ftp"}, "protocol"),
        ({"streams": "x"}, "streams"),
        ({"streams": "0"}, "streams"),
        ({"streams": "1.5"}, "streams"),
        ({"since": "last week"}, "since"),
        ({"campaign": "nope"}, "campaign"),
        ({"until": "10000-01-01T00:00:00Z"}, "until"),
    ],
)
def test_invalid_values_are_reported_by_field(params, field):
    filterset = MeasurementFilterSet(params, Measurement.objects.all())
    assert not filterset.is_valid()
    assert field in filterset.errors


def test_invalid_filter_through_the_api_is_400(anonymous):
    response = anonymous.get("/api/v1/measurements/", {"protocol": "ftp"})
    assert response.status_code == 400 and "protocol" in response.json()


def test_campaign_and_node_filtersets(measurements):
    assert CampaignFilterSet({"state": "pending"}, Campaign.objects.all()).qs.count() == 1
    assert CampaignFilterSet({"state": "finished"}, Campaign.objects.all()).qs.count() == 0
    assert list(
        NodeFilterSet({"name": "c"}, Node.objects.all()).qs.values_list("name", flat=True)
    ) == ["c"]

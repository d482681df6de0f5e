"""GET /api/v1/alerts/ and POST /api/v1/alerts/<id>/acknowledge/ (issue 24)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.results.models import Alert


def series(store, values, *, start_hours=200.0, **kwargs):
    """One check's measurements, 12 hours apart (None: all transfers failed)."""
    for i, gbps in enumerate(values):
        when = timezone.now() - timedelta(hours=start_hours - 12 * i)
        if gbps is None:
            store(gbps=1.0, failed=3, started=when, **kwargs)
        else:
            store(gbps=gbps, started=when, **kwargs)


@pytest.fixture
def three_checks(store):
    series(store, [40, 40, 40, 40, 20, 20], dst="node-b")  # warning
    series(store, [40, None, None], dst="node-c")  # critical
    series(store, [40, 40, 40], dst="node-d", protocol="root")  # ok


@pytest.mark.django_db
def test_alerts_list_each_check_with_state_since_and_reason(anonymous, three_checks):
    body = anonymous.get("/api/v1/alerts/").json()
    assert body["count"] == 3
    by_dst = {a["check"]["dst"]: a for a in body["results"]}
    warning = by_dst["node-b"]
    assert warning["check"] == {
        "src": "node-a", "dst": "node-b", "protocol": "https", "streams": 8, "auth": "x509",
        "client": "native", "checksum": "none", "scope": "host",
    }  # fmt: skip
    assert warning["state"] == "warning" and warning["acknowledged"] is False
    assert "below 70% of the 20-day median" in warning["reason"]
    assert abs(warning["last_throughput_gbps"] - 20) < 0.01
    assert by_dst["node-c"]["state"] == "critical"
    assert by_dst["node-c"]["last_throughput_gbps"] is None
    assert by_dst["node-d"]["state"] == "ok"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "dsts"),
    [
        ("state=warning", {"node-b"}),
        ("state=critical", {"node-c"}),
        ("dst=node-d", {"node-d"}),
        ("src=node-a", {"node-b", "node-c", "node-d"}),
        ("protocol=root", {"node-d"}),
        ("acknowledged=false", {"node-b", "node-c", "node-d"}),
        ("acknowledged=true", set()),
    ],
)
def test_alerts_filter(anonymous, three_checks, query, dsts):
    body = anonymous.get(f"/api/v1/alerts/?{query}").json()
    assert {a["check"]["dst"] for a in body["results"]} == dsts


@pytest.mark.django_db
def test_since_filters_on_the_last_state_change(anonymous, three_checks):
    critical = Alert.objects.get(state="critical")
    at = critical.since
    later = anonymous.get("/api/v1/alerts/", {"since": at.isoformat()}).json()
    assert critical.id in {a["id"] for a in later["results"]}
    after = (at + timedelta(seconds=1)).isoformat()
    assert critical.id not in {
        a["id"] for a in anonymous.get("/api/v1/alerts/", {"since": after}).json()["results"]
    }
    assert anonymous.get("/api/v1/alerts/?state=bad").status_code == 400


@pytest.mark.django_db
def test_acknowledging_needs_a_token_and_an_alert_that_is_not_ok(
    anonymous, reporter, three_checks, store
):
    warning = Alert.objects.get(state="warning")
    url = f"/api/v1/alerts/{warning.id}/acknowledge/"
    assert anonymous.post(url).status_code == 401
    answer = reporter.post(url)
    assert answer.status_code == 200 and answer.json()["acknowledged"] is True
    assert reporter.post(url).status_code == 200  # again: the same
    ok = Alert.objects.get(state="ok")
    refused = reporter.post(f"/api/v1/alerts/{ok.id}/acknowledge/")
    assert refused.status_code == 409 and "nothing to acknowledge" in refused.json()["state"][0]
    assert reporter.post("/api/v1/alerts/999999/acknowledge/").status_code == 404
    # two good measurements: ok again, and the flag clears itself
    series(store, [40, 40], start_hours=100, dst="node-b")
    warning.refresh_from_db()
    assert (warning.state, warning.acknowledged) == ("ok", False)


@pytest.mark.django_db
def test_the_alert_list_costs_the_same_queries_for_many(
    anonymous, three_checks, django_assert_num_queries
):
    with django_assert_num_queries(2):  # the count and the page
        anonymous.get("/api/v1/alerts/")


@pytest.mark.django_db
def test_the_admin_lists_alerts_with_their_changes(client, django_user_model, three_checks):
    user = django_user_model.objects.create_superuser("admin", "admin@example.org", "pw-12345")
    client.force_login(user)
    assert client.get("/admin/results/alert/?state__exact=critical").status_code == 200
    critical = Alert.objects.get(state="critical")
    page = client.get(f"/admin/results/alert/{critical.pk}/change/")
    assert page.status_code == 200
    assert b"all 3 transfers failed" in page.content  # the change inline
    assert client.get("/admin/results/alert/add/").status_code == 403

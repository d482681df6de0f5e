"""Redirector lookups through the API (issue 23): POST /api/v1/lookups/ with a reporter's
token, idempotent by uuid (201, 200, 409), strict 400s naming the field, hops and seconds
recomputed from the steps, filtered and paginated reads, CSV."""

import csv
import io

import pytest

from tests.webapp.site_payloads import lookup
from webapp.results.models import Campaign, Lookup

pytestmark = pytest.mark.django_db

URL = "/api/v1/lookups/"


def test_a_lookup_is_stored_with_the_servers_hops_and_seconds(reporter, anonymous):
    body = lookup(step_seconds=(0.5, 0.25, 0.125))
    body.update(hops=7, seconds=99.0)  # a client's figures: ignored
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    shown = response.json()
    assert shown["hops"] == 2 and shown["seconds"] == pytest.approx(0.875)
    assert shown["seconds_per_hop"] == pytest.approx(0.4375)
    assert [s["server"] for s in shown["steps"]] == ["regional:1094", "a-rdr:1094", "a-2:1094"]
    assert (shown["data_server"], shown["level"], shown["entry"]) == (
        "a-2:1094",
        "regional",
        "regional",
    )
    stored = Lookup.objects.get(uuid=body["uuid"])
    assert (stored.hops, stored.level_rtt_ms, stored.site) == (2, 30.0, "a")
    assert anonymous.get(f"{URL}{body['uuid']}/").json() == shown


def test_a_failed_lookup_has_no_seconds(reporter):
    body = lookup(outcome="failure", step_seconds=(0.04, 5.0))
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    shown = response.json()
    assert (shown["seconds"], shown["hops"], shown["seconds_per_hop"]) == (None, 1, None)
    assert shown["error_class"] == "timeout"


def test_a_local_lookup_without_a_redirect_has_no_seconds_per_hop(reporter):
    body = lookup(level="local", step_seconds=(0.002,), level_rtt_ms=None)
    body["steps"][0]["server"] = body["data_server"] = "a-1:1094"
    shown = reporter.post(URL, body, format="json").json()
    assert (shown["hops"], shown["seconds"], shown["seconds_per_hop"]) == (0, 0.002, None)


def test_posting_is_idempotent_by_uuid(reporter):
    campaign = "6f1c5a52-1111-4c36-9a3e-7c0ae2f6f5a1"
    body = lookup(campaign=campaign)
    assert reporter.post(URL, body, format="json").status_code == 201
    assert Campaign.objects.filter(uuid=campaign).exists()  # made on first sight
    assert reporter.post(URL, body, format="json").status_code == 200
    assert reporter.post(URL, {**body, "hops": 5}, format="json").status_code == 200  # ignored
    for change in ({"site": "b"}, {"level_rtt_ms": 10.0}, {"campaign": None}, {"message": "x"}):
        response = reporter.post(URL, {**body, **change}, format="json")
        assert response.status_code == 409, change
        assert "different content" in response.json()["uuid"][0]
    steps = [dict(s) for s in body["steps"]]
    steps[1]["seconds"] = 0.031
    assert reporter.post(URL, {**body, "steps": steps}, format="json").status_code == 409
    assert Lookup.objects.count() == 1


def test_writes_need_a_reporter(anonymous, reporter_token):
    assert anonymous.post(URL, lookup(), format="json").status_code == 401


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"protocol": "gridftp"}, "protocol"),
        ({"level": "site"}, "level"),
        ({"site": "A"}, "site"),
        ({"site": None}, "site"),
        ({"entry": "a rdr"}, "entry"),
        ({"level_rtt_ms": -1.0}, "level_rtt_ms"),
        ({"level_rtt_ms": "30"}, "level_rtt_ms"),
        ({"started": "yesterday"}, "started"),
        ({"steps": []}, "steps"),
        ({"steps": [{"server": "a-2", "seconds": 0.1}]}, "steps"),
        ({"steps": [{"server": "a-2:1094", "seconds": -0.1}]}, "steps"),
        ({"steps": [{"server": "a-2:1094"}]}, "steps"),
        ({"data_server": "a-1:1094"}, "data_server"),
        ({"data_server": None}, "data_server"),
        ({"outcome": "maybe"}, "outcome"),
        ({"error_class": "timeout"}, "error_class"),
        ({"uuid": "not-a-uuid"}, "uuid"),
        ({"hops": -1}, "hops"),
    ],
)
def test_a_bad_field_is_400_naming_it(reporter, change, field):
    response = reporter.post(URL, {**lookup(), **change}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field], response.json()


def test_too_many_steps_is_400(reporter):
    body = lookup()
    body["steps"] = [{"server": f"r{i}:1094", "seconds": 0.01} for i in range(65)]
    body["data_server"] = "r64:1094"
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400 and list(response.json()) == ["steps"]


def test_the_list_filters_and_pages(reporter, anonymous):
    campaign = "6f1c5a52-2222-4c36-9a3e-7c0ae2f6f5a1"
    local = lookup(level="local", site="b", step_seconds=(0.01, 0.002), campaign=campaign)
    regional = lookup(level="regional", protocol="root")
    glob = lookup(level="global", site="b", entry="global")
    for body in (local, regional, glob):
        assert reporter.post(URL, body, format="json").status_code == 201

    def uuids(**query) -> set[str]:
        response = anonymous.get(URL, query)
        assert response.status_code == 200, response.content
        return {item["uuid"] for item in response.json()["results"]}

    assert uuids(site="b") == {local["uuid"], glob["uuid"]}
    assert uuids(level="regional") == {regional["uuid"]}
    assert uuids(entry="b-rdr") == {local["uuid"]}
    assert uuids(protocol="root") == {regional["uuid"]}
    assert uuids(campaign=campaign) == {local["uuid"]}
    assert uuids(since="2000-01-01T00:00:00Z") == {local["uuid"], regional["uuid"], glob["uuid"]}
    assert uuids(until="2000-01-01T00:00:00Z") == set()
    page = anonymous.get(URL, {"limit": 2}).json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    for bad in ({"level": "site"}, {"protocol": "ftp"}, {"since": "soon"}, {"limit": 0}):
        response = anonymous.get(URL, bad)
        assert response.status_code == 400 and list(response.json()) == list(bad), bad


def test_csv_has_a_row_per_lookup_with_its_steps(reporter, anonymous):
    body = lookup(step_seconds=(0.5, 0.25))
    assert reporter.post(URL, body, format="json").status_code == 201
    response = anonymous.get(URL, {"format": "csv"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 1
    row = rows[0]
    assert (row["uuid"], row["level"], row["hops"], row["seconds"]) == (
        body["uuid"],
        "regional",
        "1",
        "0.75",
    )
    assert (
        row["steps"]
        == '[{"server":"regional:1094","seconds":0.5},{"server":"a-2:1094","seconds":0.25}]'
    )
    assert row["campaign"] == "" and row["error_class"] == ""


def test_the_admin_lists_lookups(reporter, client, django_user_model):
    body = lookup()
    assert reporter.post(URL, body, format="json").status_code == 201
    admin = django_user_model.objects.create_superuser("admin", "admin@example.org", "pw-12345")
    client.force_login(admin)
    page = client.get("/admin/results/lookup/", {"level": "regional"})
    assert page.status_code == 200 and body["uuid"] in page.content.decode()
    stored = Lookup.objects.get()
    assert client.get(f"/admin/results/lookup/{stored.pk}/change/").status_code == 200

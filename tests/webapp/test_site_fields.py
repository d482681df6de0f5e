"""Sites through the API (issue 23): a measurement's scope (host | site) and its ends'
sites, a transfer's data servers and redirects; stored, validated, returned and filtered;
absent keys are the defaults, so today's orchestrators' payloads ingest as before."""

import pytest

from webapp.results.models import Measurement, Node, Transfer

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"


def test_a_payload_without_sites_ingests_as_host_scope_without_sites(reporter, make_payload):
    body = make_payload(phases=True)
    assert not {"scope", "src_site", "dst_site"} & set(body)  # what orchestrators send today
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    shown = response.json()
    assert (shown["scope"], shown["src_site"], shown["dst_site"]) == ("host", None, None)
    stored = Measurement.objects.get(uuid=body["uuid"])
    assert (stored.scope, stored.src_site, stored.dst_site) == ("host", None, None)
    transfer = reporter.get(f"{URL}{body['uuid']}/").json()["transfers"][0]
    assert (transfer["source_server"], transfer["destination_server"]) == (None, None)
    assert transfer["redirects"] == 0
    assert Node.objects.get(name="node-a").site == ""
    # The defaults sent explicitly are the same payload (its stored sum did not change).
    explicit = {**body, "scope": "host", "src_site": None, "dst_site": None}
    for t in explicit["transfers"]:
        t.update(source_server=None, destination_server=None, redirects=0)
    assert reporter.post(URL, explicit, format="json").status_code == 200


def test_site_scope_is_stored_with_its_servers_redirects_and_phase(reporter, site_payload):
    body = site_payload(scope="site", src="ucsd-rdr", dst="unl-rdr", k=3, redirects=2)
    body["transfers"][1]["phases"] = dict(reversed(body["transfers"][1]["phases"].items()))
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    detail = reporter.get(f"{URL}{body['uuid']}/").json()
    assert (detail["scope"], detail["src_site"], detail["dst_site"]) == ("site", "ucsd", "unl")
    second = detail["transfers"][1]
    assert (second["source_server"], second["destination_server"]) == ("ucsd-2:1094", "unl-2:1094")
    assert second["redirects"] == 2
    # The API answers phases in the order they happen: redirect after authorize's place.
    assert list(second["phases"]) == ["redirect", "connect", "handshake", "request", "streaming"]
    stored = Transfer.objects.get(measurement__uuid=body["uuid"], index=0)
    assert (stored.source_server, stored.redirects) == ("ucsd-1:1094", 2)
    # A site-scope measurement's ends (redirectors) are not given the site's hosts' site.
    assert Node.objects.get(name="ucsd-rdr").site == ""


def test_a_host_measurement_gives_its_hosts_their_sites(reporter, site_payload):
    body = site_payload(src="ucsd-1", dst="unl-2")
    assert reporter.post(URL, body, format="json").status_code == 201
    assert dict(Node.objects.values_list("name", "site")) == {"ucsd-1": "ucsd", "unl-2": "unl"}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"scope": "cluster"}, "scope"),
        ({"scope": None}, "scope"),
        ({"src_site": "UCSD"}, "src_site"),
        ({"src_site": "ucsd-1"}, "src_site"),
        ({"dst_site": "toolongname"}, "dst_site"),
        ({"dst_site": 7}, "dst_site"),
        ({"dst_site": ""}, "dst_site"),
        ({"scope": "site", "src_site": None}, "src_site"),
        ({"scope": "site", "dst_site": None}, "dst_site"),
    ],
)
def test_a_bad_scope_or_site_is_400_naming_it(reporter, site_payload, change, field):
    response = reporter.post(URL, {**site_payload(), **change}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == [field], response.json()
    if change.get(field) not in (None, 7, "cluster"):  # the words say what a site name is
        assert "site name" in response.json()[field][0]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source_server": "ucsd-1"}, "source_server"),  # no port
        ({"source_server": "ucsd 1:1094"}, "source_server"),
        ({"destination_server": 1094}, "destination_server"),
        ({"destination_server": "unl-1:1094/x"}, "destination_server"),
        ({"redirects": -1}, "redirects"),
        ({"redirects": 1.0}, "redirects"),
        ({"redirects": None}, "redirects"),
    ],
)
def test_a_bad_server_or_redirect_count_is_400_naming_it(reporter, site_payload, change, field):
    body = site_payload()
    body["transfers"][0].update(change)
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400
    errors = response.json()["transfers"]
    assert list(errors["0"]) == [field], errors  # by the transfer's position


def test_an_ipv6_server_is_taken(reporter, site_payload):
    body = site_payload()
    body["transfers"][0]["source_server"] = "[fd00::1]:1094"
    assert reporter.post(URL, body, format="json").status_code == 201


def test_a_change_of_scope_site_or_server_is_409(reporter, site_payload):
    body = site_payload(scope="site")
    assert reporter.post(URL, body, format="json").status_code == 201
    assert reporter.post(URL, {**body, "dst_site": "cern"}, format="json").status_code == 409
    without = {k: v for k, v in body.items() if k != "scope"}  # absent means host
    assert reporter.post(URL, without, format="json").status_code == 409
    other = {**body, "transfers": [dict(t) for t in body["transfers"]]}
    other["transfers"][0]["destination_server"] = "unl-9:1094"
    assert reporter.post(URL, other, format="json").status_code == 409
    assert reporter.post(URL, body, format="json").status_code == 200


def test_the_list_filters_on_scope_and_sites(reporter, anonymous, site_payload, make_payload):
    reporter.post(URL, make_payload(), format="json")  # no sites
    ucsd_unl = site_payload(src="ucsd-1", dst="unl-1")
    unl_cern = site_payload(src="unl-1", dst="cern-1", src_site="unl", dst_site="cern")
    sites = site_payload(scope="site", src="ucsd-rdr", dst="unl-rdr")
    for body in (ucsd_unl, unl_cern, sites):
        assert reporter.post(URL, body, format="json").status_code == 201

    def uuids(**query) -> set[str]:
        response = anonymous.get(URL, query)
        assert response.status_code == 200, response.content
        return {m["uuid"] for m in response.json()["results"]}

    assert uuids(scope="site") == {sites["uuid"]}
    assert len(uuids(scope="host")) == 3
    assert uuids(site="unl") == {ucsd_unl["uuid"], unl_cern["uuid"], sites["uuid"]}
    assert uuids(src_site="unl") == {unl_cern["uuid"]}
    assert uuids(dst_site="unl") == {ucsd_unl["uuid"], sites["uuid"]}
    assert uuids(site="unl", scope="host") == {ucsd_unl["uuid"], unl_cern["uuid"]}
    assert uuids(site="nowhere") == set()
    response = anonymous.get(URL, {"scope": "region"})
    assert response.status_code == 400 and list(response.json()) == ["scope"]


def test_csv_carries_sites_and_servers_last(reporter, anonymous, site_payload):
    body = site_payload(scope="site", src="ucsd-rdr", dst="unl-rdr", k=1)
    assert reporter.post(URL, body, format="json").status_code == 201
    csv = anonymous.get(URL, {"format": "csv"})
    header, row = b"".join(csv.streaming_content).decode().splitlines()
    assert header.split(",")[-5:] == ["checksum", "scope", "src_site", "dst_site", "hosts"]
    assert row.split(",")[-4:] == ["site", "ucsd", "unl", ""]
    csv = anonymous.get(URL, {"format": "csv", "rows": "transfers"})
    header, row = b"".join(csv.streaming_content).decode().splitlines()
    assert header.split(",")[-3:] == ["source_server", "destination_server", "redirects"]
    assert row.split(",")[-3:] == ["ucsd-1:1094", "unl-1:1094", "1"]

"""A measurement's "hosts" (issue 23): null through the sites' fronts, m for a point of the
scaling sweep (K transfers spread over m host pairs); site scope only, 1..1000, stored,
returned, in the CSV, filtered (?hosts=, ?sweep=); the site grid and MaDDash's site scope
read the fronts' measurements only."""

import pytest

from webapp.results.grid.sites import site_rows
from webapp.results.models import Measurement

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"
GBIT = 2**30 * 8 / 1e9  # seconds a 1 GiB transfer takes at 1 Gbps


@pytest.fixture
def sweep(reporter, site_payload):
    """POST a site-scope measurement ucsd -> unl of `gbps` (one transfer), `hosts` as given
    (absent: not sent)."""

    def post(gbps: float, **fields) -> dict:
        body = site_payload(scope="site", src="ucsd-rdr", dst="unl-rdr", k=1, seconds=GBIT / gbps)
        body.update(fields)
        response = reporter.post(URL, body, format="json")
        assert response.status_code == 201, response.content
        return body

    return post


def test_hosts_is_stored_returned_and_part_of_the_payload(reporter, sweep):
    front = sweep(8.0)
    point = sweep(6.0, hosts=2)
    assert Measurement.objects.get(uuid=front["uuid"]).hosts is None
    assert Measurement.objects.get(uuid=point["uuid"]).hosts == 2
    assert reporter.get(f"{URL}{point['uuid']}/").json()["hosts"] == 2
    assert reporter.get(f"{URL}{front['uuid']}/").json()["hosts"] is None
    # null sent explicitly is the same payload as absent; another m is another one.
    assert reporter.post(URL, {**front, "hosts": None}, format="json").status_code == 200
    assert reporter.post(URL, point, format="json").status_code == 200
    assert reporter.post(URL, {**point, "hosts": 3}, format="json").status_code == 409
    assert reporter.post(URL, {**front, "hosts": 1}, format="json").status_code == 409


def test_a_host_measurement_has_no_hosts_field_in_its_sum(reporter, make_payload):
    body = make_payload()
    assert reporter.post(URL, body, format="json").status_code == 201
    assert reporter.post(URL, {**body, "hosts": None}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"hosts": 0}, "greater than or equal to 1"),
        ({"hosts": 1001}, "less than or equal to 1000"),
        ({"hosts": 2.0}, "integer"),
        ({"hosts": "2"}, "integer"),
        ({"hosts": True}, "integer"),
        ({"hosts": 2, "scope": "host"}, "site-scope measurements only"),
    ],
)
def test_a_bad_hosts_is_400_naming_it(reporter, site_payload, change, words):
    body = {**site_payload(scope="site", src="ucsd-rdr", dst="unl-rdr"), **change}
    response = reporter.post(URL, body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["hosts"], response.json()
    assert words in response.json()["hosts"][0].lower().replace("an integer", "integer")


def test_host_scope_without_scope_key_refuses_hosts(reporter, make_payload):
    response = reporter.post(URL, {**make_payload(), "hosts": 1}, format="json")
    assert response.status_code == 400 and list(response.json()) == ["hosts"]


def test_the_list_filters_on_hosts_and_sweep(anonymous, sweep, store):
    front = sweep(8.0)
    one, two = sweep(3.0, hosts=1), sweep(5.0, hosts=2)
    host = store(gbps=1.0)

    def uuids(**query) -> set[str]:
        response = anonymous.get(URL, query)
        assert response.status_code == 200, response.content
        return {m["uuid"] for m in response.json()["results"]}

    assert uuids(hosts=2) == {two["uuid"]}
    assert uuids(sweep="true") == {one["uuid"], two["uuid"]}
    assert uuids(sweep="false") == {front["uuid"], host["uuid"]}
    assert uuids(sweep="false", scope="site") == {front["uuid"]}
    for bad in ({"hosts": 0}, {"hosts": "two"}, {"hosts": 1001}, {"sweep": "maybe"}):
        response = anonymous.get(URL, bad)
        assert response.status_code == 400 and list(response.json()) == list(bad), bad


def test_csv_carries_hosts_last(anonymous, sweep):
    sweep(6.0, hosts=2)
    csv = anonymous.get(URL, {"format": "csv"})
    header, row = b"".join(csv.streaming_content).decode().splitlines()
    assert header.split(",")[-2:] == ["dst_site", "hosts"]
    assert row.split(",")[-3:] == ["ucsd", "unl", "2"]


def test_the_site_grid_and_maddash_read_the_fronts_only(anonymous, sweep):
    sweep(8.0)
    sweep(1.0, hosts=1)
    sweep(2.0, hosts=2)
    filters = (("auth", "x509"), ("client", "native"), ("checksum", "none"))
    [row] = site_rows(filters, ("https",))
    assert row[4] == pytest.approx(8.0, rel=1e-3) and row[7] == 1
    grid = anonymous.get("/maddash/grids/https", {"window": "1d", "scope": "site"}).json()
    assert grid["columnNames"] == ["ucsd", "unl"]
    (cell,) = grid["grid"][0][1]
    assert cell["value_gbps"] == pytest.approx(8.0, rel=1e-3) and cell["measurements"] == 1
    check = anonymous.get("/maddash/grids/https/ucsd/unl", {"window": "1d", "scope": "site"})
    assert check.json()["checks"][0]["measurements"] == 1


def test_sweep_points_alone_make_no_site_cell(sweep):
    sweep(2.0, hosts=2)
    filters = (("auth", "x509"), ("client", "native"), ("checksum", "none"))
    assert site_rows(filters, ("https",)) == []

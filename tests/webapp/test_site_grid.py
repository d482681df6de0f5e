"""The site grid (issue 23): site x site by default when measurements name sites, a cell
from the site-scope measurements between its sites or, without any, from the host ones
between their hosts; a site cell drills down to the two sites' host grid; the MaDDash JSON
gives site rows and columns with ?scope=site; the pair page names each transfer's data
servers and redirects. Without sites anywhere, everything is as before."""

import re

import pytest

from webapp.dashboard.grid import grid_page_data
from webapp.results.choices import Scope
from webapp.results.grid.sites import measured_sites, site_rows

pytestmark = pytest.mark.django_db

URL = "/api/v1/measurements/"
GBIT = 2**30 * 8 / 1e9  # seconds a 1 GiB transfer takes at 1 Gbps
ROW_NAMES = re.compile(r'<th scope="row" class="row">([^<]*)</th>')


@pytest.fixture
def post_site(reporter, site_payload):
    """POST one 1-transfer measurement of `gbps` (site_payload's sites and servers)."""

    def post(src: str, dst: str, gbps: float, **kwargs) -> dict:
        body = site_payload(src=src, dst=dst, k=1, seconds=GBIT / gbps, **kwargs)
        response = reporter.post(URL, body, format="json")
        assert response.status_code == 201, response.content
        return body

    return post


@pytest.fixture
def two_sites(post_site) -> None:
    """ucsd -> unl: two host measurements (4 and 2 Gbps); unl -> ucsd: a host one (5 Gbps)
    and a site-scope one through the redirectors (8 Gbps); within ucsd: one (1 Gbps)."""
    post_site("ucsd-1", "unl-1", 4.0)
    post_site("ucsd-2", "unl-2", 2.0)
    back = {"src_site": "unl", "dst_site": "ucsd"}
    post_site("unl-1", "ucsd-1", 5.0, **back)
    post_site("unl-rdr", "ucsd-rdr", 8.0, scope="site", redirects=2, **back)
    post_site("ucsd-1", "ucsd-2", 1.0, src_site="ucsd", dst_site="ucsd")


def test_a_cell_is_its_site_measurements_else_its_hosts_grouped(two_sites):
    assert measured_sites() == ["ucsd", "unl"]
    filters = (("auth", "x509"), ("client", "native"), ("checksum", "none"))
    rows = {tuple(r[:4]): r for r in site_rows(filters, ("https",))}
    assert set(rows) == {("https", "ucsd", "unl", 8), ("https", "unl", "ucsd", 8)}
    ucsd_unl, unl_ucsd = rows["https", "ucsd", "unl", 8], rows["https", "unl", "ucsd", 8]
    assert ucsd_unl[4] == pytest.approx(3.0, rel=1e-3) and ucsd_unl[7] == 2  # hosts, averaged
    assert unl_ucsd[4] == pytest.approx(8.0, rel=1e-3) and unl_ucsd[7] == 1  # the site one only


def test_the_maddash_site_grid(anonymous, two_sites):
    response = anonymous.get("/maddash/grids/https", {"window": "1d", "scope": "site"})
    assert response.status_code == 200, response.content
    grid = response.json()
    assert grid["columnNames"] == ["ucsd", "unl"] and grid["scope"] == "site"
    assert [row["name"] for row in grid["rows"]] == ["ucsd", "unl"]
    assert grid["grid"][0][0] is None and grid["grid"][1][1] is None
    (ucsd_unl,), (unl_ucsd,) = grid["grid"][0][1], grid["grid"][1][0]
    assert ucsd_unl["value_gbps"] == pytest.approx(3.0, rel=1e-3)
    assert ucsd_unl["measurements"] == 2
    assert unl_ucsd["value_gbps"] == pytest.approx(8.0, rel=1e-3)
    assert ucsd_unl["history_uri"] == "/?scope=host&sites=ucsd,unl"
    assert grid["rows"][0]["uri"].endswith("scope=site")
    row = anonymous.get("/maddash/grids/https/unl", {"window": "1d", "scope": "site"}).json()
    assert [cell["name"] for cell in row["cells"]] == ["ucsd"]
    cell = anonymous.get("/maddash/grids/https/ucsd/unl", {"window": "1d", "scope": "site"})
    assert cell.json()["checks"][0]["measurements"] == 2
    # Without ?scope the MaDDash grid is the host grid, as before: site-scope measurements
    # (between redirectors) stay out of it.
    hosts = anonymous.get("/maddash/grids/https", {"window": "1d"}).json()
    assert "scope" not in hosts and "ucsd-1" in hosts["columnNames"]
    rdr = hosts["columnNames"].index("unl-rdr"), hosts["columnNames"].index("ucsd-rdr")
    assert hosts["grid"][rdr[0]][rdr[1]][0]["status"] == 4  # not run: no host measurement
    # Its check resource reads what its cells read: no site-scope measurement either.
    check = anonymous.get("/maddash/grids/https/unl-rdr/ucsd-rdr/8%20streams").json()
    assert check["history"] == [] and check["status"] == 4
    host_check = anonymous.get("/maddash/grids/https/ucsd-1/unl-1/8%20streams").json()
    assert len(host_check["history"]) == 1
    for unknown in ("/maddash/grids/ftp", "/maddash/grids/https/cern", "/maddash/grids/ftp/a/b"):
        assert anonymous.get(unknown, {"scope": "site"}).status_code == 404
    bad = anonymous.get("/maddash/grids/https", {"scope": "region"})
    assert bad.status_code == 400 and list(bad.json()) == ["scope"]


def test_the_grid_page_is_site_by_site_with_a_drill_down(client, two_sites):
    page = client.get("/", {"window": "1d"}).content.decode()
    assert 'class="intro site-grid"' in page
    assert ROW_NAMES.findall(page) == ["ucsd", "unl"]
    assert 'href="/?window=1d&amp;scope=host&amp;sites=ucsd,unl"' in page  # ucsd -> unl
    assert 'href="/?window=1d&amp;scope=host&amp;sites=unl,ucsd"' in page
    assert 'aria-label="Rows and columns"' in page
    drilled = client.get("/", {"window": "1d", "scope": "host", "sites": "ucsd,unl"})
    html = drilled.content.decode()
    assert ROW_NAMES.findall(html) == ["ucsd-1", "ucsd-2", "unl-1", "unl-2"]  # no redirectors
    assert "Hosts of sites ucsd and unl" in html
    assert 'href="/pairs/ucsd-1/unl-1/"' in html
    whole = client.get("/", {"window": "1d", "scope": "host"}).content.decode()
    assert "unl-rdr" in ROW_NAMES.findall(whole) and "Hosts of site" not in whole
    # A site nobody measured is no drill-down.
    assert grid_page_data(window="1d", scope="host", sites="cern").drilled == []


def test_without_sites_the_grid_is_as_before(client, store):
    store(src="a", dst="b", gbps=10.0)
    store(src="b", dst="a", gbps=5.0)
    page = grid_page_data(window="1d")
    assert (page.scope, page.sites, page.drilled) == (Scope.HOST, [], [])
    html = client.get("/", {"window": "1d"}).content.decode()
    assert ROW_NAMES.findall(html) == ["a", "b"]
    assert 'href="/pairs/a/b/"' in html
    assert "site-grid" not in html and "Rows and columns" not in html
    # Asking for the site grid without sites shows the host grid, the same table.
    asked = client.get("/", {"window": "1d", "scope": "site"}).content.decode()
    table = re.compile(r'<table class="grid".*?</table>', re.S)
    assert table.findall(asked) == table.findall(html) != []


def test_the_pair_page_names_the_data_servers_and_redirects(client, two_sites, store):
    html = client.get("/pairs/unl-rdr/ucsd-rdr/").content.decode()
    assert "Data servers" in html
    assert "unl-1:1094 → ucsd-1:1094<br>2 redirects, 0.050 s" in html
    assert "site unl → ucsd" in html
    store(src="a", dst="b", gbps=10.0)
    plain = client.get("/pairs/a/b/").content.decode()
    assert "Data servers" not in plain and 'colspan="11"' in plain

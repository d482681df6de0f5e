"""The grid and pair pages with measurements of several authorizations and clients, and
transfers with phases (issue 12)."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.support.webapp_pages import cell, figure, grid_tables

pytestmark = pytest.mark.django_db

GBIT = 2**30 * 8 / 1e9  # seconds a 1 GiB transfer takes at 1 Gbps


def dimension_links(html: str) -> dict[str, list[tuple[str, bool]]]:
    """Per selector (auth, client): its links' labels and whether each is the current one."""
    found = {}
    for name, body in re.findall(r'data-dimension="(\w+)">(.*?)</nav>', html, re.S):
        found[name] = [
            (label, "aria-current" in attrs)
            for attrs, label in re.findall(r"<a ([^>]*)>([^<]*)</a>", body)
        ]
    return found


def test_the_grid_page_shows_one_auth_and_client_at_a_time(client, ingest):
    for src, dst in (("a", "b"), ("b", "a")):
        ingest(src=src, dst=dst, k=1, seconds=GBIT / 10)  # 10 Gbps, x509 and native
        ingest(src=src, dst=dst, k=1, seconds=GBIT / 1, auth="token", client="gfal2")
    ingest(src="a", dst="b", k=1, seconds=GBIT / 2, protocol="root")  # only x509 and native
    default = client.get("/?window=20d").content.decode()
    assert set(grid_tables(default)) == {"https", "root"}
    assert "10.00 Gbps" in cell(grid_tables(default), "https", "a", "b")["bands"][0]["tip"]
    assert dimension_links(default) == {
        "auth": [("x509", True), ("token", False)],
        "client": [("native", True), ("gfal2", False)],
    }
    chosen = client.get("/?window=20d&auth=token&client=gfal2").content.decode()
    assert set(grid_tables(chosen)) == {"https"}
    assert "1.00 Gbps" in cell(grid_tables(chosen), "https", "a", "b")["bands"][0]["tip"]
    assert dimension_links(chosen)["auth"] == [("x509", False), ("token", True)]
    assert 'href="?window=20d&amp;auth=x509&amp;client=gfal2"' in chosen  # keeps the others
    nothing = client.get("/?window=20d&auth=token").content.decode()
    assert grid_tables(nothing) == {}
    assert "No measurements authorized by token with the native client" in nothing


def test_the_grid_page_offers_no_choice_while_only_the_defaults_were_measured(client, ingest):
    ingest(src="a", dst="b")
    html = client.get("/").content.decode()
    assert dimension_links(html) == {} and "data-dimension" not in html


def test_the_pair_page_shows_the_dimensions_and_where_the_time_goes(client, ingest):
    started = timezone.now() - timedelta(hours=2)
    ingest(src="a", dst="b", k=3, seconds=8.0, phases=True, started=started)
    ingest(
        src="a", dst="b", k=3, seconds=4.0, phases=True, auth="token", client="gfal2",
        failed=1, started=started + timedelta(minutes=1),
    )  # fmt: skip
    ingest(src="a", dst="b", k=3, seconds=2.0, protocol="gridftp", started=started)  # no phases
    html = client.get("/pairs/a/b/").content.decode()
    latest = html.split('id="latest-heading"')[1].split("</table>")[0]
    assert '<th scope="col" title="How the transfers were authorized">Auth</th>' in latest
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td>(\w+)</td>", latest)
    assert rows == [("gridftp", "x509", "native"), ("https", "x509", "native"),
                    ("https", "token", "gfal2")]  # fmt: skip
    # Median setup (a tenth of each transfer) and streaming rate of the successful ones.
    assert '<td class="num">0.800</td><td class="num">1.19</td>' in latest  # 8.59 Gbit / 7.2 s
    assert '<td class="num">0.400</td><td class="num">2.39</td>' in latest
    # gridftp recorded no phases (2), and no check had a checksum step (3)
    assert latest.count('<td class="num">\u2013</td>') == 5
    fig = figure(html, "phases-figure")
    assert [t["name"] for t in fig["data"]] == ["connect", "handshake", "request", "streaming"]
    assert fig["data"][0]["y"] == ["https", "https, token, gfal2"]
    assert fig["data"][3]["x"] == [pytest.approx(7.2), pytest.approx(3.6)]
    assert fig["data"][3]["customdata"] == [3, 2]  # the failed transfer is left out
    assert fig["layout"]["barmode"] == "stack"
    assert 'id="phases-plot"' in html
    assert "token · gfal2 · median setup 0.400 s · median streaming 2.39 Gbps" in html
    history = [t["name"] for t in figure(html, "history-figure")["data"]]
    assert history == ["gridftp, 8 streams", "https, 8 streams",
                       "https, token, gfal2, 8 streams", "RTT (ms, right axis)"]  # fmt: skip


def test_the_pair_page_without_phases_has_no_phases_plot(client, ingest):
    ingest(src="a", dst="b")
    html = client.get("/pairs/a/b/").content.decode()
    assert 'id="phases-plot"' not in html and 'id="history-plot"' in html


def test_the_pair_page_reads_as_many_queries_whatever_the_dimensions(client, ingest):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/pairs/a/b/").status_code == 200
        return len(captured)

    ingest(src="a", dst="b", phases=True)
    one = queries()
    for auth in ("x509", "token"):
        for client_name in ("native", "gfal2"):
            for protocol in ("https", "root"):
                ingest(src="a", dst="b", phases=True, auth=auth, client=client_name,
                       protocol=protocol)  # fmt: skip
    assert queries() == one

"""The checksum dimension in the selectors and on the pages: none unless asked, adler32 in
cells of its own; the pair page's checksum phase and what the step cost (issue 22)."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.support.webapp_pages import cell, figure, grid_tables
from webapp.dashboard.plots import PHASE_COLOURS
from webapp.results.grid.queries import build_bands, grid_dimensions, grid_names
from webapp.results.phases import PHASE_ORDER, SETUP_PHASES, phase_names, setup_s
from webapp.results.selectors.aggregates import stream_comparison, throughput_vs_latency

pytestmark = pytest.mark.django_db

GBIT = 2**30 * 8 / 1e9  # seconds a 1 GiB transfer takes at 1 Gbps


def dimension_links(html: str) -> dict[str, list[tuple[str, bool]]]:
    """Per selector on the grid page: its links' labels and whether each is the current one."""
    found = {}
    for name, body in re.findall(r'data-dimension="(\w+)">(.*?)</nav>', html, re.S):
        found[name] = [
            (label, "aria-current" in attrs)
            for attrs, label in re.findall(r"<a ([^>]*)>([^<]*)</a>", body)
        ]
    return found


@pytest.fixture
def mesh(reporter, ingest, ingest_checksum) -> str:
    """a <-> b in one finished campaign: 8 streams at 10 Gbps without a checksum step and at
    2 Gbps with adler32; 1 stream at 1 Gbps with adler32 (a -> b only). Its uuid."""
    campaign = reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"]
    for src, dst in (("a", "b"), ("b", "a")):
        ingest(src=src, dst=dst, k=1, seconds=GBIT / 10, campaign=campaign, rtt_ms=10.0)
        ingest_checksum(src=src, dst=dst, k=1, seconds=GBIT / 2, campaign=campaign, rtt_ms=10.0)
    ingest_checksum(src="a", dst="b", k=1, streams=1, seconds=GBIT, campaign=campaign)
    reporter.patch(f"/api/v1/campaigns/{campaign}/", {"state": "finished"}, format="json")
    return campaign


def test_phases_in_the_orchestrators_order_with_authorize_as_setup() -> None:
    assert PHASE_ORDER == (
        "authorize", "redirect", "connect", "handshake", "request", "streaming", "poll", "close",
        "checksum",
    )  # fmt: skip
    assert SETUP_PHASES == ("authorize", "redirect", "connect", "handshake", "request")
    phases = {"checksum": 0.3, "streaming": 1.0, "connect": 0.2, "authorize": 0.1, "x": 0.0}
    assert phase_names(phases) == ["authorize", "connect", "streaming", "checksum", "x"]
    assert setup_s(phases) == pytest.approx(0.3)  # the checksum step is no setup
    colours = [PHASE_COLOURS[name] for name in PHASE_ORDER]
    assert len(set(colours)) == len(colours)  # each phase its own colour


@pytest.mark.parametrize("window", ["20d", "latest"])
def test_the_selectors_read_none_unless_asked_and_adler32_apart(mesh, window):
    assert ("https", "x509", "native", "adler32") in grid_dimensions()
    assert grid_names() == ["https"] == grid_names(checksum="adler32")
    default = build_bands(["https"], window)[0]
    chosen = build_bands(["https"], window, checksum="adler32")[0]
    assert (default.checksum, chosen.checksum) == ("none", "adler32")
    assert default.streams == [8] and chosen.streams == [8, 1]
    a_to_b = (default.cells[0][1], chosen.cells[0][1])
    # (status, message, last, value, succeeded, failed, measurements) per band
    assert a_to_b[0][0][3] == pytest.approx(10.0) and a_to_b[0][0][6] == 1
    assert a_to_b[1][0][3] == pytest.approx(2.0) and a_to_b[1][0][6] == 1
    assert a_to_b[1][1][3] == pytest.approx(1.0)
    latency = throughput_vs_latency(protocol="https", streams=8, window=window)
    assert [p["throughput_gbps"] for p in latency["points"]] == pytest.approx([10.0, 10.0])
    latency = throughput_vs_latency(protocol="https", streams=8, window=window, checksum="adler32")
    assert [p["throughput_gbps"] for p in latency["points"]] == pytest.approx([2.0, 2.0])
    assert stream_comparison(protocol="https", window=window)["pairs"][0]["ratio"] is None
    pair = stream_comparison(protocol="https", window=window, checksum="adler32")["pairs"][0]
    assert pair["ratio"] == pytest.approx(2.0)


def test_the_grid_page_shows_one_checksum_at_a_time(client, mesh):
    default = client.get("/").content.decode()
    assert "10.00 Gbps" in cell(grid_tables(default), "https", "a", "b")["bands"][0]["tip"]
    # Only checksum was measured with two values: the one selector offered.
    assert dimension_links(default) == {"checksum": [("none", True), ("adler32", False)]}
    assert "dimensions-shown" not in default  # the defaults: the page says nothing new
    chosen = client.get("/?checksum=adler32").content.decode()
    bands = cell(grid_tables(chosen), "https", "a", "b")["bands"]
    assert "2.00 Gbps" in bands[0]["tip"] and "1.00 Gbps" in bands[1]["tip"]
    assert dimension_links(chosen)["checksum"] == [("none", False), ("adler32", True)]
    assert "Measurements whose transfers ended with the adler32 checksum step." in chosen
    nothing = client.get("/?checksum=adler32&auth=token").content.decode()
    assert grid_tables(nothing) == {}
    assert (
        "No measurements authorized by token with the native client and the adler32 checksum "
        "step" in nothing
    )
    assert 'href="?checksum=adler32&amp;auth=x509"' in nothing  # keeps the checksum


def test_the_plot_pages_take_the_checksum(client, mesh):
    default = client.get("/plots/latency/?streams=8&window=20d").content.decode()
    points = figure(default, "latency-figure")["data"][0]
    assert points["name"] == "https, 8 streams" and points["y"] == pytest.approx([10.0, 10.0])
    assert re.search(r'<select name="checksum">\s*<option value="none" selected>', default)
    json_link = re.search(r'href="(/api/v1/throughput-vs-latency/[^"]*)"', default).group(1)
    assert "checksum" not in json_link  # the default is not spelled out: the link is as it was
    chosen = client.get("/plots/latency/?streams=8&window=20d&checksum=adler32").content.decode()
    points = figure(chosen, "latency-figure")["data"][0]
    assert points["name"] == "https, adler32, 8 streams"
    assert points["y"] == pytest.approx([2.0, 2.0])
    assert '<option value="adler32" selected>' in chosen
    assert "Measurements whose transfers ended with the adler32 checksum step." in chosen
    assert (
        "/api/v1/throughput-vs-latency/?protocol=https&amp;streams=8&amp;window=20d"
        "&amp;checksum=adler32" in chosen
    )
    csv_link = re.search(r'href="(/api/v1/measurements/\?protocol=https[^"]*)"', chosen).group(1)
    assert "checksum=adler32" in csv_link and "auth=x509" in csv_link
    rows = b"".join(client.get(csv_link.replace("&amp;", "&")).streaming_content).decode()
    assert len(rows.splitlines()) == 3  # the header and the two 8-stream adler32 rows
    streams = client.get("/plots/streams/?window=20d&checksum=adler32").content.decode()
    (points, _) = figure(streams, "streams-figure")["data"]
    assert points["name"] == "https, adler32" and points["x"] == pytest.approx([1.0])
    default = client.get("/plots/streams/?window=20d").content.decode()
    assert figure(default, "streams-figure")["data"] == []  # no 1-stream result without it


def test_the_pair_page_shows_the_checksum_phase_and_its_cost(client, ingest, ingest_checksum):
    started = timezone.now() - timedelta(hours=2)
    ingest(src="a", dst="b", k=3, seconds=8.0, phases=True, started=started)
    ingest_checksum(
        src="a", dst="b", k=3, seconds=8.0, checksum_s=0.4, failed=1,
        error_class="checksum-mismatch", started=started + timedelta(minutes=1),
    )  # fmt: skip
    html = client.get("/pairs/a/b/").content.decode()
    latest = html.split('id="latest-heading"')[1].split("</table>")[0]
    assert '<th scope="col" title="The checksum step each transfer ended with">Checksum</th>' in (
        latest
    )
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td>(\w+)</td><td>(\w+)</td>", latest)
    assert rows == [("https", "x509", "native", "none"), ("https", "x509", "native", "adler32")]
    # 0.4 s of an 8-second transfer: 5%; the measurement without the step has none.
    assert '<td class="num">0.400 (5.0%)</td>' in latest
    assert latest.count('<td class="num">\u2013</td></tr>') == 1
    fig = figure(html, "phases-figure")
    names = [t["name"] for t in fig["data"]]
    assert names == ["connect", "handshake", "request", "streaming", "checksum"]
    step = fig["data"][-1]
    assert step["y"] == ["https", "https, adler32"]
    assert step["x"] == [0.0, pytest.approx(0.4)]
    assert step["customdata"] == [3, 2]  # the mismatched transfer is a failure: left out
    assert step["marker"]["color"] == PHASE_COLOURS["checksum"]
    costs = html.split('class="checksum-costs"')[1].split("</ul>")[0]
    assert "<strong>https, adler32:</strong> the adler32 checksum step took a median 0.400 s" in (
        costs
    )
    assert "5.0% of a transfer's duration (median of 2 successful transfers)" in costs
    # The transfers: the step per transfer, and the mismatch like any other error class.
    assert "· adler32 · median setup 0.800 s" in html
    assert "median checksum 0.400 s (5.0%)" in html
    transfers = html.split('id="transfers-heading"')[1]
    assert transfers.count('<td class="num">0.400</td><td class="num">1073741824</td>') == 3
    assert "<td>checksum-mismatch</td>" in transfers
    history = [t["name"] for t in figure(html, "history-figure")["data"]]
    assert history[:2] == ["https, 8 streams", "https, adler32, 8 streams"]


def test_a_grid_band_whose_transfers_all_mismatched_says_so(client, ingest_checksum):
    ingest_checksum(src="a", dst="b", k=2, failed=2, error_class="checksum-mismatch")
    html = client.get("/?window=20d&checksum=adler32").content.decode()
    tip = cell(grid_tables(html), "https", "a", "b")["bands"][0]["tip"]
    assert "All 2 transfers failed: checksum-mismatch" in tip

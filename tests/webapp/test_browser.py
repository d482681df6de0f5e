"""The dashboard in a real headless Chromium (Debian's), driven by Playwright.

The test fails if the grid does not render: it counts rows and cells, compares each
band's computed colour with its status, hovers a cell, follows it to the pair's history
and checks that every Plotly figure drew its SVG. Screenshots land in a temporary
directory whose paths are printed (pytest -s shows them).
"""

from __future__ import annotations

import re
import uuid as uuid_lib
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NODES = [f"node-{i:02d}" for i in range(1, 7)]
GIB = 2**30
# MaDDash's colour-blind-safe defaults as the browser reports them, by status 0..4.
STATUS_RGB = {
    0: "rgb(0, 158, 115)",
    1: "rgb(240, 228, 66)",
    2: "rgb(204, 121, 167)",
    3: "rgb(230, 159, 0)",
    4: "rgb(86, 180, 233)",
}


def fill_mesh(store) -> None:
    """Six nodes; https for every pair (OK, WARNING, CRITICAL, one all-failed, one never run),
    gridftp for some pairs, and two weeks of history for node-01 -> node-02."""
    campaign = uuid_lib.uuid4()
    now = timezone.now().replace(microsecond=0)
    for i, src in enumerate(NODES):
        for j, dst in enumerate(NODES):
            if src == dst or (src, dst) == ("node-06", "node-05"):
                continue  # node-06 -> node-05 never ran
            rtt = 5.0 + 7.0 * abs(i - j)
            multi = 45.0 - 6.0 * abs(i - j)  # OK near, WARNING/CRITICAL far
            failed = 4 if (src, dst) == ("node-03", "node-01") else 0
            for streams, gbps in ((8, multi), (1, multi / 3)):
                store(
                    src=src,
                    dst=dst,
                    protocol="https",
                    streams=streams,
                    gbps=gbps,
                    started=now - timedelta(minutes=30),
                    failed=failed if streams == 8 else 0,
                    transfers=4,
                    rtt_ms=rtt,
                    campaign=campaign,
                    phases=True,
                )
            if (i + j) % 2:
                store(
                    src=src,
                    dst=dst,
                    protocol="gridftp",
                    streams=8,
                    gbps=multi * 0.8,
                    started=now - timedelta(minutes=20),
                    transfers=4,
                    rtt_ms=rtt,
                    campaign=campaign,
                    phases=True,
                )
    for day in range(1, 15):
        for protocol in ("https", "gridftp"):
            for streams in (8, 1):
                store(
                    src="node-01",
                    dst="node-02",
                    protocol=protocol,
                    streams=streams,
                    gbps=(40.0 if streams == 8 else 14.0)
                    - day * 0.5
                    - (5.0 if protocol == "gridftp" else 0.0),
                    started=now - timedelta(days=day, hours=protocol == "gridftp"),
                    transfers=4,
                    rtt_ms=11.0 + day % 3,
                    phases=True,
                )


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    directory = tmp_path / "screenshots"
    directory.mkdir()
    return directory


def test_dashboard_in_chromium(live_server, screenshots, store, request):
    from playwright.sync_api import expect

    fill_mesh(store)  # all database work before Playwright starts its event loop
    chromium = request.getfixturevalue("chromium")
    errors: list[str] = []
    saved: list[Path] = []
    page = chromium.new_page(viewport={"width": 1366, "height": 900})
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

    page.goto(f"{live_server.url}/")
    https = page.locator('table.grid[data-grid="https"]')
    https.wait_for()
    n = len(NODES)
    assert https.locator("tbody tr").count() == n
    assert https.locator("tbody tr th.row").all_inner_texts() == NODES
    assert https.locator("thead th.col").count() == n
    assert https.locator("tbody td").count() == n * n
    assert https.locator("td.self").count() == n
    assert https.locator("a.cell").count() == n * (n - 1)
    assert https.locator("a.cell .band").count() == n * (n - 1) * 2

    # Every band is painted in its status colour, and the cells are really drawn.
    painted = page.evaluate(
        """() => [...document.querySelectorAll('table.grid .band')].map(b => {
             const r = b.getBoundingClientRect();
             return [Number(b.dataset.status), getComputedStyle(b).backgroundColor,
                     r.width, r.height];
           })"""
    )
    statuses = {status for status, *_ in painted}
    assert {0, 1, 2, 4} <= statuses
    for status, colour, width, height in painted:
        assert colour == STATUS_RGB[status]
        assert width >= 16 and height >= 8
    assert https.locator(".band.allfailed").count() == 1

    saved.append(screenshots / "grid.png")
    page.screenshot(path=str(saved[-1]), full_page=True)

    # Hover: the tooltip tells value, count and time of both bands of the cell.
    target = https.locator('a.cell[data-src="node-01"][data-dst="node-02"]')
    target.locator(".band").first.hover()
    tooltip = page.locator("#grid-tooltip")
    tooltip.wait_for(state="visible")
    expect(tooltip).to_contain_text("node-01 \u2192 node-02")
    text = tooltip.inner_text()
    assert "node-01 \u2192 node-02" in text
    assert "8 streams: 39.00 Gbps (OK)" in text
    assert "1 stream: 13.00 Gbps" in text
    assert "4/4 succeeded" in text and "UTC" in text
    assert page.locator("thead th.col.hl").count() == 1  # crosshair on the column
    saved.append(screenshots / "grid-hover.png")
    page.screenshot(path=str(saved[-1]))

    failed = https.locator('a.cell[data-src="node-03"][data-dst="node-01"] .band').first
    failed.hover()
    expect(tooltip).to_contain_text("node-03 \u2192 node-01")
    assert "All 4 transfers failed: timeout" in tooltip.inner_text()

    # Click: the pair's history with four throughput series and RTT.
    target.click()
    page.wait_for_url("**/pairs/node-01/node-02/")
    page.locator("#history-plot .main-svg").first.wait_for()
    page.locator("#history-plot[data-rendered=true]").wait_for()
    assert page.locator("#history-plot .scatterlayer .trace").count() == 5
    legend = page.locator("#history-plot .legendtext").all_text_contents()
    assert legend[:4] == [
        "gridftp, 8 streams",
        "gridftp, 1 stream",
        "https, 8 streams",
        "https, 1 stream",
    ]
    assert page.locator("table.transfers tbody tr").count() > 4
    # Where the time goes: a bar per phase, stacked, for https and for gridftp.
    page.locator("#phases-plot[data-rendered=true]").wait_for()
    assert page.locator("#phases-plot .barlayer .trace").count() == 4
    phases = page.locator("#phases-plot .legendtext").all_text_contents()
    assert phases == ["connect", "handshake", "request", "streaming"]
    assert page.locator("#phases-plot .barlayer .point").count() == 8  # 4 phases x 2 protocols
    saved.append(screenshots / "pair.png")
    page.screenshot(path=str(saved[-1]), full_page=True)

    page.goto(f"{live_server.url}/plots/latency/?window=20d&streams=8")
    page.locator("#latency-plot[data-rendered=true]").wait_for()
    assert page.locator("#latency-plot .scatterlayer .trace").count() == 4  # 2 x (points, fit)
    assert any("slope" in t for t in page.locator("#latency-plot .legendtext").all_text_contents())
    saved.append(screenshots / "latency.png")
    page.screenshot(path=str(saved[-1]), full_page=True)

    page.goto(f"{live_server.url}/plots/streams/?window=20d")
    page.locator("#streams-plot[data-rendered=true]").wait_for()
    assert page.locator("#streams-plot .scatterlayer .trace").count() == 3  # 2 + y = x
    assert page.locator("#streams-plot .scatterlayer .trace .point").count() >= 25
    saved.append(screenshots / "streams.png")
    page.screenshot(path=str(saved[-1]), full_page=True)

    for path in saved:
        print(f"screenshot: {path}")
        assert path.stat().st_size > 10_000
    assert errors == []


def test_prelim_page_and_pair_baseline_in_chromium(
    live_server, screenshots, reporter, store, request
):
    """Figure 3's three lines on /plots/prelim/ and Figure 5's reference line on a pair page,
    drawn by Plotly in a real browser."""
    from tests.support.webapp_payloads import baseline, prelim_run

    assert reporter.post("/api/v1/prelim-runs/", prelim_run(), format="json").status_code == 201
    now = timezone.now()
    body = baseline(started=now - timedelta(hours=2))
    assert reporter.post("/api/v1/baselines/", body, format="json").status_code == 201
    store(src="node-a", dst="node-b", gbps=10.0, started=now - timedelta(hours=1))
    chromium = request.getfixturevalue("chromium")
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/plots/prelim/")
    page.locator("#concurrency-plot[data-rendered=true]").wait_for()
    legend = page.locator("#concurrency-plot .legendtext").all_text_contents()
    assert legend == ["cp (memory to memory)", "HTTPS-TPC", "GridFTP-TPC"]
    assert page.locator("#concurrency-plot .scatterlayer .trace").count() == 3
    page.screenshot(path=str(screenshots / "prelim.png"), full_page=True)

    page.goto(f"{live_server.url}/pairs/node-a/node-b/")
    page.locator("#history-plot[data-rendered=true]").wait_for()
    legend = page.locator("#history-plot .legendtext").all_text_contents()
    assert "link baseline (iperf3, 8 streams)" in legend
    page.screenshot(path=str(screenshots / "pair-baseline.png"), full_page=True)
    print(f"screenshots: {screenshots}")
    assert errors == []


def test_pair_page_checksum_phase_in_chromium(
    live_server, screenshots, ingest, ingest_checksum, request
):
    """The pair page's phases plot draws the checksum step (issue 22): its own bar after the
    copy's, in its own colour, beside a measurement without the step."""
    started = timezone.now() - timedelta(hours=1)
    ingest(src="node-a", dst="node-b", k=4, seconds=8.0, phases=True, started=started)
    ingest_checksum(
        src="node-a", dst="node-b", k=4, seconds=8.0, checksum_s=1.6, failed=1,
        error_class="checksum-mismatch", started=started + timedelta(minutes=1),
    )  # fmt: skip
    chromium = request.getfixturevalue("chromium")
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_server.url}/pairs/node-a/node-b/")
    page.locator("#phases-plot[data-rendered=true]").wait_for()
    legend = page.locator("#phases-plot .legendtext").all_text_contents()
    assert legend == ["connect", "handshake", "request", "streaming", "checksum"]
    traces = page.locator("#phases-plot .barlayer .trace")
    assert traces.count() == 5
    # The checksum trace: one bar drawn (the measurement without the step has a zero-width
    # one), in vermillion, as wide as a fifth of the streaming bar beside it (1.6 s of 8).
    widths = page.evaluate(
        """() => [...document.querySelectorAll('#phases-plot .barlayer .trace')].map(t =>
             [...t.querySelectorAll('.point path')].map(p => p.getBoundingClientRect().width))"""
    )
    streaming, checksum = widths[3], widths[4]
    assert checksum[0] < 1 and checksum[1] > 10
    assert checksum[1] / streaming[1] == pytest.approx(1.6 / 5.6, rel=0.05)
    fill = page.locator("#phases-plot .barlayer .trace").nth(4).locator(".point path").nth(1)
    assert "rgb(213, 94, 0)" in fill.get_attribute("style")  # #D55E00
    costs = page.locator(".checksum-costs li").all_inner_texts()
    assert costs == [
        "https, adler32: the adler32 checksum step took a median 1.600 s, 20.0% of a "
        "transfer's duration (median of 3 successful transfers)."
    ]
    cells = page.locator("table.transfers tr.failure td")
    assert cells.filter(has_text=re.compile("^checksum-mismatch$")).count() == 1  # its class
    page.screenshot(path=str(screenshots / "pair-checksum.png"), full_page=True)
    print(f"screenshots: {screenshots}")
    assert errors == []


def test_site_grid_and_drill_down_in_chromium(live_server, screenshots, site_payload, request):
    """Issue 23: with measurements between sites the grid page opens on the site grid
    (ucsd, unl), its cells painted; clicking ucsd -> unl opens the host grid of the two
    sites' hosts, whose cells go to the pair pages as before."""
    from rest_framework.test import APIClient

    from webapp.results.api.permissions import api_token_create

    reporter = APIClient()
    reporter.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(name='orchestrator')}")
    seconds = GIB * 8 / 1e9 / 4.0  # 4 Gbps
    for src, dst, sites in (
        ("ucsd-1", "unl-1", ("ucsd", "unl")),
        ("ucsd-2", "unl-2", ("ucsd", "unl")),
        ("unl-1", "ucsd-2", ("unl", "ucsd")),
    ):
        body = site_payload(src=src, dst=dst, src_site=sites[0], dst_site=sites[1], k=2,
                            seconds=seconds)  # fmt: skip
        assert reporter.post("/api/v1/measurements/", body, format="json").status_code == 201
    chromium = request.getfixturevalue("chromium")
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

    page.goto(f"{live_server.url}/?window=1d")
    grid = page.locator('table.grid[data-grid="https"]')
    grid.wait_for()
    assert grid.locator("tbody tr th.row").all_inner_texts() == ["ucsd", "unl"]
    assert grid.locator("a.cell").count() == 2 and grid.locator("td.self").count() == 2
    painted = page.evaluate(
        """() => [...document.querySelectorAll('table.grid .band')].map(b => {
             const r = b.getBoundingClientRect();
             return [Number(b.dataset.status), getComputedStyle(b).backgroundColor, r.width];
           })"""
    )
    assert len(painted) == 2
    for status, colour, width in painted:
        assert colour == STATUS_RGB[status] and width >= 16
    page.screenshot(path=str(screenshots / "site-grid.png"), full_page=True)

    grid.locator('a.cell[data-src="ucsd"][data-dst="unl"]').click()
    page.wait_for_url(re.compile(r"scope=host&sites=ucsd,unl"))
    hosts = page.locator('table.grid[data-grid="https"]')
    hosts.wait_for()
    assert hosts.locator("tbody tr th.row").all_inner_texts() == [
        "ucsd-1", "ucsd-2", "unl-1", "unl-2",
    ]  # fmt: skip
    assert "Hosts of sites ucsd and unl" in page.locator(".drill-down").inner_text()
    back = page.locator(".drill-down a").get_attribute("href")
    assert "window=1d" in back and "scope=site" in back and "sites=" not in back
    page.screenshot(path=str(screenshots / "site-drill-down.png"), full_page=True)
    hosts.locator('a.cell[data-src="ucsd-1"][data-dst="unl-1"]').click()
    page.wait_for_url(re.compile(r"/pairs/ucsd-1/unl-1/"))
    servers = page.locator("table.transfers td.servers").all_inner_texts()
    assert servers == [
        "ucsd-1:1094 → unl-1:1094\n1 redirect, 0.050 s",
        "ucsd-2:1094 → unl-2:1094\n1 redirect, 0.050 s",
    ]
    print(f"screenshots: {screenshots}")
    assert errors == []

"""The Sites page in a real headless Chromium (issue 23): the navigation links it, each
scaling curve draws its SVG (the measured points and the dashed ideal line), and the
hop-overhead table shows the levels and STFC's published row."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.webapp.site_payloads import lookup, sweep_point

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    directory = tmp_path / "screenshots"
    directory.mkdir()
    return directory


def test_sites_page_in_chromium(live_server, screenshots, request):
    from rest_framework.test import APIClient

    from webapp.results.api.permissions import api_token_create

    reporter = APIClient()
    reporter.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(name='orchestrator')}")
    bodies = [
        ("measurements", sweep_point(hosts=hosts, gbps=gbps))
        for hosts, gbps in ((1, 4.0), (2, 7.5), (3, 10.0), (None, 9.0))
    ]
    bodies.append(("measurements", sweep_point(hosts=2, gbps=6.0, src_site="b", dst_site="a")))
    bodies += [
        ("lookups", lookup(level="local", step_seconds=(0.01, 0.002), level_rtt_ms=0)),
        ("lookups", lookup(step_seconds=(0.05, 0.04, 0.01))),
        ("lookups", lookup(level="global", protocol="root", step_seconds=(0.2, 0.1, 0.02))),
    ]
    for kind, body in bodies:
        response = reporter.post(f"/api/v1/{kind}/", body, format="json")
        assert response.status_code == 201, response.content
    chromium = request.getfixturevalue("chromium")
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

    page.goto(f"{live_server.url}/?window=1d")
    page.locator('nav[aria-label="Main"] a[href="/sites/"]').click()
    page.wait_for_url(f"{live_server.url}/sites/")
    assert page.locator('nav a[aria-current="page"]').inner_text() == "Sites"
    page.locator('a:text("24 h")').click()
    plots = page.locator("div.plot[data-figure]")
    assert plots.count() == 2  # a -> b and b -> a, https, 8 streams
    for i in range(2):
        plots.nth(i).and_(page.locator("[data-rendered=true]")).wait_for()
    first = page.locator("#scaling-0-plot")
    assert first.locator(".scatterlayer .trace").count() == 2  # measured + ideal
    assert first.locator(".scatterlayer .trace .point").count() == 3  # 1, 2, 3 hosts
    dashed = page.evaluate(
        """() => [...document.querySelectorAll('#scaling-0-plot .scatterlayer .js-line')]
             .map(l => l.style.strokeDasharray || '')"""
    )
    assert dashed[0] == "" and dashed[1] != ""  # the ideal line is dashed
    legend = first.locator(".legendtext").all_text_contents()
    assert legend == ["measured (mean of the sweep's points)", "ideal: hosts \u00d7 one host's"]
    assert page.locator("#scaling-1-plot .scatterlayer .trace").count() == 1  # no 1-host point
    assert page.locator("figure.scaling figcaption").all_inner_texts() == [
        "a → b · https · 8 streams",
        "b → a · https · 8 streams",
    ]
    table = page.locator("table.hops")
    assert table.locator("tbody th[scope=row]").all_inner_texts() == [
        "Local: the file's own site's redirector",
        "Regional redirector",
        "Global redirector",
        "STFC (published)",
    ]
    regional = table.locator("tbody tr").nth(1).locator("td").all_inner_texts()
    assert regional == ["https", "1", "0", "0.100", "2", "0.050", "30.0"]
    assert table.locator("tr.reference td").first.inner_text() == "0.3-1.5"
    page.screenshot(path=str(screenshots / "sites.png"), full_page=True)
    print(f"screenshots: {screenshots}")
    assert errors == []

"""The grid page at 200 nodes in a real headless Chromium (issue 24): 10 sites of 20 nodes,
one campaign measuring every ordered pair but one, inserted with bulk_create (one fill).

The compact host grid renders every cell at its size, the site groups show, the node filter
box narrows it to the node's row and column, the pair left out of the campaign (measured 2
days ago, in a rotation of 2 twelve-hour cycles) is marked overdue, a hover tells a cell's
values, a click opens its pair's page, and the Campaigns box shows the counters.
Screenshots land in a temporary directory (or TPCBENCH_SCREENSHOTS) whose path is printed.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.webapp_pages import BIG_SITES, bulk_measurement, bulk_mesh
from webapp.results.models import Campaign

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OLD = ("ucsd-01", "unl-01")
ROTATION = {"mode": "rotate", "cycle_seconds": 43200.0, "k": 2, "k_min": 2, "part": 2}
COUNTERS = {"planned": 39799, "done": 39790, "failed": 4, "missed": 3, "late": 2}
STATUS_RGB = {"rgb(0, 158, 115)", "rgb(240, 228, 66)", "rgb(204, 121, 167)"}


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    directory = Path(os.environ.get("TPCBENCH_SCREENSHOTS") or tmp_path / "screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_the_200_node_grid_in_chromium(live_server, screenshots, request):
    mesh = bulk_mesh(sites=10, per_site=20, skip=(OLD,), cycle_fit=ROTATION)
    Campaign.objects.filter(pk=mesh["campaign"].pk).update(**COUNTERS)
    bulk_measurement(*OLD, ago=timedelta(days=2))
    chromium = request.getfixturevalue("chromium")  # after the database work
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1920, "height": 1080})
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

    page.goto(f"{live_server.url}/?scope=host")
    table = page.locator('table.grid.compact[data-grid="https"]')
    table.wait_for()
    assert table.locator("tbody th.row").count() == 200
    assert table.locator("thead th.col").count() == 200
    assert table.locator("tbody td").count() == 200 * 200
    assert table.locator("tbody td.x").count() == 200
    assert table.locator("tbody td > i").count() == 200 * 199 - 1  # the old pair: not run
    # Every site a group: a header row over its rows, a header over its columns, in view.
    sites = sorted(BIG_SITES)
    assert table.locator("tbody tr.group th").all_inner_texts() == sites
    assert table.locator("thead th.group").all_inner_texts() == sites
    assert table.locator("thead th.group").first.is_visible()
    # Drawn: square cells, painted in their statuses' colours, the whole grid 1920 wide.
    drawn = page.evaluate(
        """() => {
          const t = document.querySelector('table.grid.compact');
          const cells = [...t.tBodies[0].querySelectorAll('td:not(.x)')];
          const sizes = new Set(cells.slice(0, 500).map(c => {
            const r = c.getBoundingClientRect(); return `${r.width}x${r.height}`; }));
          const colours = new Set([...t.querySelectorAll('td > i')].slice(0, 3000)
            .map(i => getComputedStyle(i).backgroundColor));
          return {sizes: [...sizes], colours: [...colours], width: t.getBoundingClientRect().width};
        }"""
    )
    assert drawn["sizes"] == ["8x8"], drawn["sizes"]
    assert set(drawn["colours"]) <= STATUS_RGB and len(drawn["colours"]) == 3, drawn
    assert drawn["width"] <= 1920, drawn["width"]
    page.screenshot(path=str(screenshots / "grid-200.png"), full_page=True)

    # The pair left out is overdue: marked (a corner) and said on hover.
    rows = table.locator("tbody tr:not(.group)")
    columns = table.locator("thead th.col").all_inner_texts()
    old = (
        rows.nth(sorted(mesh["names"], key=_site_order).index(OLD[0]))
        .locator("td")
        .nth(columns.index(OLD[1]))
    )
    assert old.get_attribute("class").split() == ["n", "gs", "o"]  # gs: unl's first column
    assert old.get_attribute("data-age") == "2.0 d"
    mark = old.evaluate("c => getComputedStyle(c, '::after').borderTopColor")
    assert mark == "rgb(29, 29, 31)"
    old.hover()
    tooltip = page.locator("#grid-tooltip")
    assert tooltip.is_visible()
    assert "ucsd-01 → unl-01" in tooltip.inner_text()
    assert "last measured 2.0 d ago — overdue" in tooltip.inner_text()
    assert page.get_by_text("1 pair overdue").is_visible()
    fresh = rows.nth(0).locator("td").nth(1)
    fresh.hover()
    text = tooltip.inner_text()
    assert text.startswith(f"{columns[0]} → {columns[1]}") and "8 streams: " in text
    assert "Gbps (" in text
    page.screenshot(path=str(screenshots / "grid-200-hover.png"))

    # The filter box narrows the grid to the node's row and column, and says so.
    page.fill("#node-filter", "ucsd-07")
    page.press("#node-filter", "Enter")
    page.wait_for_url("**node=ucsd-07**")
    assert "scope=host" in page.url
    narrowed = page.locator('table.grid.compact[data-grid="https"]')
    assert narrowed.locator("tbody th.row").first.inner_text() == "ucsd-07"
    assert narrowed.locator("tbody td").count() == 200 + 199
    assert page.locator(".node-filter-result").inner_text().startswith("1 node matches")
    page.screenshot(path=str(screenshots / "grid-200-filtered.png"), full_page=True)

    # A click opens the pair's page, which says how old its latest measurement is.
    narrowed.locator("tbody tr:not(.group)").nth(1).locator("td").nth(0).click()
    page.wait_for_url("**/pairs/**")
    assert page.url.endswith("/pairs/bnl-01/ucsd-07/")  # the first other row: bnl
    assert page.locator(".last-measured").inner_text().startswith("Last measured")

    # The Campaigns box: what the orchestrator counted, and how it fitted its cycle.
    page.goto(f"{live_server.url}/?scope=host&node=zzz")
    box = page.locator("section.campaigns")
    line = box.locator(".campaign-last").inner_text()
    for name, n in COUNTERS.items():
        assert f"{n} {name}" in line
    assert "cycle: rotate: part 2 of 2" in line
    box.screenshot(path=str(screenshots / "campaigns.png"))
    print(f"screenshots: {screenshots}")
    assert errors == []


def _site_order(name: str) -> tuple[str, str]:
    return name.rsplit("-", 1)[0], name

"""The grid marks alerting cells (issue 24), in a real headless Chromium: a warning and a
critical check are outlined and badged, an ok one is not, and the cell's words say it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    directory = tmp_path / "screenshots"
    directory.mkdir()
    return directory


def test_the_grid_marks_alerting_cells_in_chromium(live_server, screenshots, store, request):
    now = timezone.now()
    histories = {
        "node-b": [40, 40, 40, 40, 20, 20],  # warning: half its median
        "node-c": [40, 40, 40, 40, 5, 5],  # critical: below the critical limit
        "node-d": [40, 40, 40, 40, 40, 40],  # ok
    }
    for dst, values in histories.items():
        for i, gbps in enumerate(values):
            store(dst=dst, gbps=gbps, started=now - timedelta(hours=60 - 12 * i))
    chromium = request.getfixturevalue("chromium")
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 900, "height": 700})
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{live_server.url}/?window=7d")
    grid = page.locator('table.grid[data-grid="https"]')
    grid.wait_for()
    marked = page.evaluate(
        """() => [...document.querySelectorAll('table.grid td.alert')].map(td => {
             const style = getComputedStyle(td), badge = td.querySelector('.alert-badge');
             const rect = badge.getBoundingClientRect();
             return [td.querySelector('a.cell').dataset.dst, td.dataset.alert,
                     style.outlineStyle, style.outlineColor, rect.width > 0 && rect.height > 0];
           })"""
    )
    assert marked == [
        ["node-b", "warning", "solid", "rgb(184, 134, 11)", True],
        ["node-c", "critical", "solid", "rgb(122, 31, 79)", True],
    ]
    ok_cell = grid.locator('a.cell[data-src="node-a"][data-dst="node-d"]')
    assert ok_cell.locator(".alert-badge").count() == 0
    label = grid.locator('a.cell[data-src="node-a"][data-dst="node-c"]').get_attribute("aria-label")
    assert label.endswith("; alert: critical")
    # the badge sits on the cell, and the bands still fill it
    bands = grid.locator('a.cell[data-src="node-a"][data-dst="node-c"] .band')
    assert bands.count() == 1 and bands.first.bounding_box()["height"] > 10
    grid.screenshot(path=str(screenshots / "grid-alerts.png"))
    print(f"screenshots: {screenshots}")
    assert errors == []

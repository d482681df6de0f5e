"""The grid page at 200 nodes (issue 24): grouped by site, filtered by node, compact.

The layout (grid_layout) is checked on its own; the page once, on a 200-node mesh of 10
sites inserted with bulk_create (one fill for the module's page test)."""

from __future__ import annotations

import pytest

from tests.support.webapp_pages import bulk_mesh, compact_tables, grid_tables
from webapp.dashboard.grid_layout import COMPACT_ABOVE, NO_SITE, filter_terms, grid_layout

NAMES = ["a-1", "a-2", "b-1", "b-2", "x-1"]
SITES = {"a-1": "siteb", "a-2": "siteb", "b-1": "sitea", "b-2": "sitea"}  # x-1: none


def test_rows_and_columns_are_grouped_by_site_no_site_last():
    layout = grid_layout(NAMES, SITES, [])
    order = [NAMES[i] for i in layout.rows]
    assert order == ["b-1", "b-2", "a-1", "a-2", "x-1"]
    assert layout.cols == layout.rows
    assert [(g.label, g.size) for g in layout.row_groups] == [
        ("sitea", 2),
        ("siteb", 2),
        (NO_SITE, 1),
    ]
    assert layout.widths == [5] * 5
    assert not layout.compact


def test_no_sites_no_groups_in_the_grids_order():
    layout = grid_layout(NAMES, {}, [])
    assert layout.rows == list(range(5)) and layout.row_groups == [] and layout.col_groups == []


def test_the_filter_shows_the_matching_nodes_rows_and_columns_first():
    layout = grid_layout(NAMES, SITES, filter_terms("A-2"))
    assert NAMES[layout.rows[0]] == "a-2"
    assert NAMES[layout.cols[0]] == "a-2"
    assert layout.matched == 1
    # its row spans every column; every other row holds only its column (what it receives)
    assert layout.widths == [5, 1, 1, 1, 1]
    assert layout.cells == 5 + 4
    assert layout.row_groups[0].matched and layout.row_groups[0].label == "siteb"


def test_the_filter_matches_a_site_by_name_and_several_terms():
    by_site = grid_layout(NAMES, SITES, filter_terms("sitea"))
    assert by_site.matched == 2 and by_site.widths == [5, 5, 2, 2, 2]
    several = grid_layout(NAMES, SITES, filter_terms("a-1, x-1"))
    assert several.matched == 2
    assert {NAMES[i] for i in several.rows[:2]} == {"a-1", "x-1"}


def test_a_filter_that_matches_nothing_shows_nothing():
    layout = grid_layout(NAMES, SITES, filter_terms("zzz"))
    assert layout.rows == [] and layout.cells == 0 and layout.terms == ["zzz"]


def test_filter_terms_are_bounded_and_deduplicated():
    assert filter_terms(" UCSD-1,ucsd-1  unl ") == ["ucsd-1", "unl"]
    assert filter_terms(None) == []
    assert len(filter_terms(",".join(f"n{i}" for i in range(500)))) == 50


def test_compact_above_the_limit():
    names = [f"n{i:03d}" for i in range(COMPACT_ABOVE + 1)]
    assert grid_layout(names, {}, []).compact
    assert not grid_layout(names[:COMPACT_ABOVE], {}, []).compact


@pytest.mark.django_db
def test_the_200_node_grid_page(client):
    mesh = bulk_mesh(sites=10, per_site=20)
    names = mesh["names"]
    # Measurements name sites: the page opens on the site grid, 10 x 10.
    site_page = client.get("/").content.decode()
    assert len(grid_tables(site_page)["https"]["rows"]) == 10

    response = client.get("/?scope=host")
    assert response.status_code == 200
    html = response.content.decode()
    table = compact_tables(html)["https"]
    assert table["attrs"]["data-checks"] == "8 streams"
    assert len(table["rows"]) == 200 and len(table["columns"]) == 200
    # every ordered pair a cell, the diagonal marked, rows and columns in site order
    assert sum(len(row["cells"]) for row in table["rows"]) == 200 * 200
    assert all(row["cells"][i]["classes"][0] == "x" for i, row in enumerate(table["rows"]))
    assert [row["name"] for row in table["rows"]] == sorted(names, key=lambda n: (n[:-3], n))
    sites = sorted({n[:-3] for n in names})
    assert table["groups"] == [{"label": s, "start": 20 * i} for i, s in enumerate(sites)]
    assert table["colgroups"] == [{"label": s, "size": 20} for s in sites]
    # every measured cell holds its band and value; no link or words per cell
    cell = table["rows"][0]["cells"][1]
    assert cell["bands"] and cell["bands"][0][0] in {"s0", "s1", "s2"} and "data-v" in cell
    assert 'a class="cell"' not in html
    # the page stays small: well under 100 bytes a cell (the full table takes ~450)
    assert len(response.content) < 40_000 * 100, len(response.content)

    # the filter keeps the matching node's row and column, and its value in the box
    narrowed = client.get("/?scope=host&node=ucsd-07").content.decode()
    assert 'value="ucsd-07"' in narrowed and "1 node matches" in narrowed
    small = compact_tables(narrowed)["https"]
    assert small["rows"][0]["name"] == "ucsd-07" and small["columns"][0] == "ucsd-07"
    assert [len(r["cells"]) for r in small["rows"]] == [200] + [1] * 199
    # the window links keep the filter
    assert "node=ucsd-07" in narrowed.split('aria-label="Time window"', 1)[1].split("</nav>", 1)[0]
    # a whole site: 20 rows of 200 cells, 180 of 20
    site = compact_tables(client.get("/?scope=host&node=unl").content.decode())["https"]
    assert sorted({len(r["cells"]) for r in site["rows"]}) == [20, 200]
    assert client.get("/?scope=host&node=nowhere").content.decode().count("<td") < 5

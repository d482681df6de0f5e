"""The grid page's data: a section per grid (one protocol) around its table
(webapp.dashboard.grid_table, built from `results.grid`, what the MaDDash JSON is built from
too), laid out by grid_layout (site groups, the node filter, compact) and aged by cell_age."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.safestring import SafeString

from webapp.dashboard.cell_age import Ages
from webapp.dashboard.grid_layout import Layout, filter_terms, grid_layout
from webapp.dashboard.grid_table import STATUS_NAMES, build_table
from webapp.results.cache import cached_aggregate
from webapp.results.choices import DIMENSION_DEFAULTS, Auth, Checksum, Client, Protocol, Scope
from webapp.results.grid.ages import (
    NormalPeriod,
    lookback_seconds,
    node_rows,
    normal_period,
    pairs_last_seen,
)
from webapp.results.grid.bands import GridBands, status_labels
from webapp.results.grid.limits import NOT_RUN
from webapp.results.grid.queries import build_bands, grid_dimensions
from webapp.results.grid.sites import build_site_bands, measured_sites
from webapp.results.selectors.alerts import alerting_cells
from webapp.results.selectors.baselines import latest_link_baselines
from webapp.results.selectors.campaigns import CampaignStart

# MaDDash status codes (CheckConstants.java, grid_table.STATUS_NAMES) and its
# colour-blind-safe default palette.
STATUS_COLOURS = ("#009E73", "#F0E442", "#CC79A7", "#E69F00", "#56B4E9")

PROTOCOL_TITLES = {
    "https": "HTTPS (XRootD, WebDAV COPY)",
    "gridftp": "GridFTP (globus-url-copy)",
    "root": "XRootD root:// (xrdcp --tpc)",
}


@dataclass(frozen=True)
class LegendEntry:
    status: int
    name: str
    label: str
    colour: str


@dataclass(frozen=True)
class GridSection:
    """Everything the grid page shows for one grid (one protocol)."""

    name: str
    slug: str
    title: str
    check_names: list[str]
    legend: list[LegendEntry]
    table_html: SafeString
    last_update: datetime | None
    n_rows: int
    n_cols: int
    n_measured: int
    stats: list[tuple[str, int]]
    problems: list[str]
    campaign: CampaignStart | None = None  # window 'latest': the latest campaign
    compact: bool = False  # drawn compact (grid_layout.COMPACT_ABOVE)
    overdue: int = 0  # cells whose latest measurement is overdue (cell_age)


def build_section(
    grid: GridBands,
    links: dict[tuple[str, str], float] | None = None,
    cell_link: tuple[str, str, str] | None = None,
    alerts: dict[tuple[str, str], str] | None = None,
    layout: Layout | None = None,
    ages: Ages | None = None,
) -> GridSection:
    name = grid.name
    slug = "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-") or "grid"
    title = PROTOCOL_TITLES.get(name.lower(), name)
    if grid.scope == Scope.SITE:
        title += ", site to site"
    labels = status_labels(grid)
    legend = [
        LegendEntry(
            status=i,
            name=STATUS_NAMES[i],
            label=str(labels[i]) if i < len(labels) and labels[i] else STATUS_NAMES[i],
            colour=STATUS_COLOURS[i],
        )
        for i in range(len(STATUS_NAMES))
    ]
    measured = sum(grid.stats) - grid.stats[NOT_RUN]  # bands that hold a result
    # Shown only when the window holds a result (MaDDash says "now" for an empty one).
    last = grid.last_update if measured else None
    return GridSection(
        name=name,
        slug=slug,
        title=title,
        check_names=list(grid.check_names),
        legend=legend,
        table_html=build_table(grid, slug, title, links, cell_link, alerts, layout, ages),
        last_update=datetime.fromtimestamp(last, tz=UTC) if last else None,
        n_rows=len(layout.rows) if layout else len(grid.names),
        n_cols=len(layout.cols) if layout else len(grid.names),
        n_measured=measured,
        stats=[(STATUS_NAMES[i], n) for i, n in enumerate(grid.stats[: len(STATUS_NAMES)]) if n],
        problems=[
            f"{direction} transfers of {node} all failing or below threshold"
            for direction, node in grid.failing
        ],
        campaign=grid.campaign,
        compact=bool(layout and layout.compact),
        overdue=count_overdue(grid, ages) if ages else 0,
    )


def count_overdue(grid: GridBands, ages: Ages) -> int:
    """Cells of `grid` (all of them, shown or not) whose latest measurement is overdue."""
    names = grid.names
    return sum(
        1
        for r, row in enumerate(grid.cells)
        for c, cell in enumerate(row)
        if cell is not None and (age := ages.of(names[r], names[c], cell)) and age[1]
    )


@dataclass(frozen=True)
class GridPage:
    """The grid page's data: a section per grid, and which dimensions were ever measured."""

    sections: list[GridSection]
    auths: list[str]  # authorizations with measurements, in the order of Auth
    clients: list[str]  # clients with measurements, in the order of Client
    checksums: list[str]  # checksum steps with measurements, in the order of Checksum
    # host or site (issue 23): what the rows and columns are; the sites measured (none: the
    # grid is host x host as before sites existed); a drill-down's two sites, if any.
    scope: str = Scope.HOST
    sites: list[str] = field(default_factory=list)
    drilled: list[str] = field(default_factory=list)
    # issue 24: the node filter's terms and how many nodes they matched; how often a pair
    # is measured (ages: when a cell is overdue).
    terms: list[str] = field(default_factory=list)
    matched: int = 0
    period: NormalPeriod | None = None


def drill_down_link(window: str, dimensions: dict[str, str]) -> tuple[str, str, str]:
    """A site cell's link (around its two sites' names): the grid page's host x host grid of
    those two sites' hosts, over the same window and dimensions."""
    query = {k: v for k, v in dimensions.items() if v != DIMENSION_DEFAULTS[k]}
    if window != "latest":
        query["window"] = window
    head = reverse("dashboard:grid") + "?" + urlencode({**query, "scope": Scope.HOST})
    return head + "&sites=", ",", ""


def chosen_scope(asked: str | None, sites: list[str]) -> str:
    """The grid's scope: site by default when any measurement names sites, else host; a
    site grid asked for without sites is the host grid."""
    if not sites:
        return Scope.HOST
    return asked if asked in Scope.values else Scope.SITE


def drill_down_sites(raw: str | None, sites: list[str]) -> list[str]:
    """'ucsd,unl' -> the measured ones of them, in their order (none: no drill-down)."""
    asked = [s for s in (raw or "").split(",") if s]
    return [s for s in dict.fromkeys(asked) if s in sites]


def _ages(
    grids: list[GridBands],
    period: NormalPeriod,
    nodes: list[tuple[int, str, str]],
    dimensions: dict,
) -> dict[str, Ages]:
    """Per grid: how old its cells are. Where a window shows no result for a cell (not run
    in it), the pair's latest measurement before, looked for (one query for every grid) only
    among the sources of such cells."""
    ids = {name: node_id for node_id, name, _ in nodes}
    names = {node_id: name for node_id, name, _ in nodes}
    sources = {
        ids[grid.names[r]]
        for grid in grids
        if grid.stats[NOT_RUN]
        for r, row in enumerate(grid.cells)
        if grid.names[r] in ids
        and any(cell is not None and not any(band[2] for band in cell) for cell in row)
    }
    found = pairs_last_seen(
        [grid.name for grid in grids], sources, lookback=lookback_seconds(period), **dimensions
    )
    now = time.time()
    last_seen: dict[str, dict[tuple[str, str], int]] = {grid.name: {} for grid in grids}
    for (protocol, src, dst), last in found.items():
        if src in names and dst in names:
            last_seen[protocol][names[src], names[dst]] = last
    return {grid.name: Ages(now, period, last_seen[grid.name]) for grid in grids}


@cached_aggregate("grid-page")
def grid_page_data(
    *,
    window: str = "latest",
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
    scope: str | None = None,
    sites: str = "",
    node: str = "",
) -> GridPage:
    """A section per grid with results of this authorization, client and checksum (none:
    none such), and the authorizations, clients and checksums measured (none: an empty
    database); raises ValueError (window).

    `scope`: site (the default when measurements name sites) or host; `sites` ('ucsd,unl'),
    with scope host: only those sites' hosts (a site cell's drill-down). `node`: the node
    filter (grid_layout: the matching nodes' rows and columns)."""
    measured = grid_dimensions()  # one query for the grids to show and the choices
    names = [p for p in Protocol.values if (p, auth, client, checksum) in measured]
    dimensions = {"auth": auth, "client": client, "checksum": checksum}
    known_sites = measured_sites() if names else []
    shown = chosen_scope(scope, known_sites)
    drilled = drill_down_sites(sites, known_sites) if shown == Scope.HOST else []
    cell_link = None
    if shown == Scope.SITE:
        grids = build_site_bands(names, window, sites=known_sites, with_campaign=True, **dimensions)
        cell_link = drill_down_link(window, dimensions)
    else:
        # As results.grid.queries.all_grid_bands, with the combinations read once.
        grids = build_bands(names, window, with_campaign=True, sites=tuple(drilled), **dimensions)
    links = latest_link_baselines() if grids and shown == Scope.HOST else {}
    # The alerts are host to host: the site grid has none to mark.
    alerts = alerting_cells(protocols=names, **dimensions) if grids and shown == Scope.HOST else {}
    terms = filter_terms(node)
    period = normal_period() if grids else None
    # Hosts are grouped by their sites and aged by their latest measurements (a site grid's
    # rows are sites already; its cells are aged by what they show).
    ages: dict[str, Ages] = {}
    node_site: dict[str, str] = {}
    if period is not None and shown == Scope.HOST:
        nodes = node_rows()
        node_site = {name: site for _, name, site in nodes}
        ages = _ages(grids, period, nodes, dimensions)
    sections = []
    matched = 0
    for grid in grids:
        layout = grid_layout(grid.names, node_site, terms)
        matched = layout.matched
        aged = ages.get(grid.name) or (Ages(time.time(), period) if period else None)
        sections.append(build_section(grid, links, cell_link, alerts.get(grid.name), layout, aged))
    return GridPage(
        scope=shown,
        sites=known_sites,
        drilled=drilled,
        terms=terms,
        matched=matched,
        period=period,
        sections=sections,
        auths=[a for a in Auth.values if any(m[1] == a for m in measured)],
        clients=[c for c in Client.values if any(m[2] == c for m in measured)],
        checksums=[c for c in Checksum.values if any(m[3] == c for m in measured)],
    )

"""Turn one grid (`results.grid`, what the MaDDash JSON is built from too) into HTML.

The table's frame (caption, header row) is the template dashboard/_grid_table.html. Its
body is joined here from pieces Django escapes: `format_html` makes each row's and each
column's parts of a cell, and a band's fixed parts (per check, status and counts: they
recur all over a table), once per table; `escape` takes names and messages. A band's value
is digits and our own words.

Joined rather than a template loop or `format_html_join` over every cell and band: a
30-node mesh has 870 cells x 2 bands per protocol, and the benchmark's grid page
(bench/webapp.py: 30 nodes, the latest campaign, two grids) built its tables in 7 ms
joined, 100 ms with `format_html` per cell and band, 256 ms with the body in the template's
loops, against a 150 ms budget for the whole page (5 ms when the escaping was our own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from urllib.parse import quote, urlencode

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from webapp.results.cache import cached_aggregate
from webapp.results.choices import DIMENSION_DEFAULTS, Auth, Checksum, Client, Protocol, Scope
from webapp.results.grid.bands import GridBands, status_labels
from webapp.results.grid.limits import NOT_RUN, STATUS_SHORT_NAMES, UNKNOWN
from webapp.results.grid.queries import build_bands, grid_dimensions
from webapp.results.grid.sites import build_site_bands, measured_sites
from webapp.results.selectors.alerts import alerting_cells
from webapp.results.selectors.baselines import latest_link_baselines
from webapp.results.selectors.campaigns import CampaignStart

# MaDDash status codes (CheckConstants.java) and its colour-blind-safe default palette.
STATUS_NAMES = tuple(STATUS_SHORT_NAMES)
STATUS_COLOURS = ("#009E73", "#F0E442", "#CC79A7", "#E69F00", "#56B4E9")
TABLE_TEMPLATE = "dashboard/_grid_table.html"

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


@lru_cache(maxsize=8192)
def _minute_text(minute: int) -> str:
    return datetime.fromtimestamp(minute * 60, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def format_time(epoch: float | int | None) -> str:
    # Shown to the minute; a campaign's checks share few minutes, so this is mostly cached.
    return _minute_text(int(epoch) // 60) if epoch else "never"


def status_name(status: int) -> str:
    return STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else f"STATUS {status}"


# Per status: the class of its band.
_STATUS_CLASS = {status: f"band s{status}" for status in range(NOT_RUN + 1)}


def _band_pieces(
    check_name: str, status: int, ok: int, failed: int, counts: dict[tuple[int, int], str]
) -> tuple[SafeString, SafeString, SafeString, SafeString]:
    """The fixed pieces of a band's <span> and of the words a screen reader hears, for bands of
    this check, status and counts (they recur all over a table): (span up to the value, span
    from the value up to the time, words up to the value, words after it).

    data-tip holds the tooltip's fields, one a line: check, value, status, count, time, message.
    `counts` remembers "k/K succeeded" per (succeeded, failed): a few pairs recur in a grid.
    """
    classes = _STATUS_CLASS.get(status) or f"band s{UNKNOWN}"
    count = counts.get((ok, failed))
    if count is None:
        count = counts[ok, failed] = (
            f"{ok}/{ok + failed} succeeded" if ok + failed else "no transfers"
        )
    if failed:
        # Some transfers failed: hatched; none succeeded: also crossed out.
        classes += " failed" if ok else " failed allfailed"
    name = status_name(status)
    return (
        format_html(
            '<span class="{}" data-status="{}" data-tip="{}\n', classes, status, check_name
        ),
        format_html("\n{}\n{}\n", name, count),
        format_html("{} ", check_name),
        format_html(" {}, {}", name, count) if failed else format_html(" {}", name),
    )


def _pair_link_parts() -> tuple[str, str, str]:
    """The pair page's URL around its two names (before the source, between them, after the
    destination): reverse() once per table."""
    pattern = reverse("dashboard:pair", kwargs={"src": "SRC", "dst": "DST"})
    head, _, tail = pattern.partition("SRC")
    middle, _, end = tail.partition("DST")
    return head, middle, end


def of_link(value_gbps: float, link_gbps: float | None) -> str:
    """ " (25% of the link's 40.00)": the value as a fraction of the pair's link baseline."""
    if not link_gbps:
        return ""
    return f" ({100 * value_gbps / link_gbps:.0f}% of the link's {link_gbps:.2f})"


_SAME_NODE = '<td class="self" aria-label="same node"></td>'
_BAND_END = '"></span>'
_join = "".join


# A cell whose checks alert (docs/alerts.md): its <td>'s class and a badge in its link.
_ALERT_TD = {state: f'<td class="alert alert-{state}" data-alert="{state}">' for state in
             ("warning", "critical")}  # fmt: skip
_ALERT_BADGE = {
    state: f'<span class="alert-badge" aria-hidden="true" title="Alert: {state}">!</span>'
    for state in ("warning", "critical")
}


def build_table(
    grid: GridBands,
    slug: str,
    title: str,
    links: dict[tuple[str, str], float] | None = None,
    cell_link: tuple[str, str, str] | None = None,
    alerts: dict[tuple[str, str], str] | None = None,
) -> SafeString:
    """The grid as an HTML table. A cell is
    <td><a class="cell" href="HREF" aria-label="SRC to DST: WORDS" data-src="SRC"
    data-dst="DST">BANDS</a></td>: its row's and its column's parts are made once per table,
    by format_html; per cell only the words and bands are put in.
    `links`: each pair's latest link baseline, so a value reads as a fraction of it too.
    `cell_link`: a cell's URL around its two names (default: the pair page's).
    `alerts`: (src, dst) -> the state of the pair's alerting checks (warning, critical): the
    cell's <td> has class "alert alert-STATE" and its link a badge."""
    links = links or {}
    # Django's escaping, once per name: format_html passes an escaped string through as it is.
    names = [escape(name) for name in grid.names]
    quoted = [escape(quote(name, safe="")) for name in grid.names]
    head, middle, end = (escape(part) for part in cell_link or _pair_link_parts())
    columns = [
        (
            format_html('{}{}" aria-label="', dst_quoted, end),
            format_html(" to {}: ", dst),
            format_html('" data-dst="{}">', dst),
        )
        for dst, dst_quoted in zip(names, quoted, strict=True)
    ]
    times: dict[int | None, str] = {}  # minute -> its text (a campaign spans few minutes)
    counts: dict[tuple[int, int], str] = {}
    parts: list[str] = []
    append = parts.append
    # Per (check, status, succeeded, failed): the band's fixed pieces (_band_pieces'), which
    # recur all over a table; per band only the value, time and message are put in.
    pieces: dict[tuple[int, int, int, int], tuple[SafeString, ...]] = {}
    checks = list(enumerate(grid.check_names))
    for r, row_cells in enumerate(grid.cells):
        src = names[r]
        append(format_html('<tr><th scope="row" class="row">{}</th>', src))
        row_link = format_html('<a class="cell" href="{}{}{}', head, quoted[r], middle)
        row_href = "<td>" + row_link
        row_data = format_html('" data-src="{}', src)
        for c, cell in enumerate(row_cells):
            if cell is None:
                append(_SAME_NODE)
                continue
            link = links.get((grid.names[r], grid.names[c])) if links else None
            bands = []
            spoken = []
            for (i, check_name), band in zip(checks, cell, strict=True):
                status, message, last, value_gbps, ok, failed, measurements = band
                minute = last // 60 if last else None
                when = times.get(minute)
                if when is None:
                    when = times[minute] = format_time(last)
                fixed = pieces.get((i, status, ok, failed))
                if fixed is None:
                    fixed = pieces[i, status, ok, failed] = _band_pieces(
                        check_name, status, ok, failed, counts
                    )
                span_head, span_middle, spoken_head, spoken_tail = fixed
                # The value: digits and our own words, nothing to escape.
                if value_gbps is None:
                    value = "no value"
                else:
                    value = f"{value_gbps:.2f} Gbps{of_link(value_gbps, link) if link else ''}"
                if not failed and value_gbps is not None and measurements <= 1:
                    message = ""  # it would only repeat the value
                elif message:
                    message = escape(" ".join(message.split()))
                bands.append(_join((span_head, value, span_middle, when, "\n", message, _BAND_END)))
                spoken.append(_join((spoken_head, value, spoken_tail)))
            href_tail, to_dst, data_dst = columns[c]
            state = alerts.get((grid.names[r], grid.names[c])) if alerts else None
            if state is not None:
                spoken.append(f"alert: {state}")
                bands.append(_ALERT_BADGE[state])
            append(
                _join(
                    (
                        _ALERT_TD[state] + row_link if state else row_href, href_tail, src,
                        to_dst, "; ".join(spoken), row_data,
                        data_dst, _join(bands), "</a></td>",
                    )
                )
            )  # fmt: skip
        append("</tr>")
    context = {"grid": grid, "slug": slug, "title": title, "body": mark_safe(_join(parts))}
    return mark_safe(render_to_string(TABLE_TEMPLATE, context).strip())


def build_section(
    grid: GridBands,
    links: dict[tuple[str, str], float] | None = None,
    cell_link: tuple[str, str, str] | None = None,
    alerts: dict[tuple[str, str], str] | None = None,
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
        table_html=build_table(grid, slug, title, links, cell_link, alerts),
        last_update=datetime.fromtimestamp(last, tz=UTC) if last else None,
        n_rows=len(grid.names),
        n_cols=len(grid.names),
        n_measured=measured,
        stats=[(STATUS_NAMES[i], n) for i, n in enumerate(grid.stats[: len(STATUS_NAMES)]) if n],
        problems=[
            f"{direction} transfers of {node} all failing or below threshold"
            for direction, node in grid.failing
        ],
        campaign=grid.campaign,
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


@cached_aggregate("grid-page")
def grid_page_data(
    *,
    window: str = "latest",
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
    scope: str | None = None,
    sites: str = "",
) -> GridPage:
    """A section per grid with results of this authorization, client and checksum (none:
    none such), and the authorizations, clients and checksums measured (none: an empty
    database); raises ValueError (window).

    `scope`: site (the default when measurements name sites) or host; `sites` ('ucsd,unl'),
    with scope host: only those sites' hosts (a site cell's drill-down)."""
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
    return GridPage(
        scope=shown,
        sites=known_sites,
        drilled=drilled,
        sections=[build_section(grid, links, cell_link, alerts.get(grid.name)) for grid in grids],
        auths=[a for a in Auth.values if any(m[1] == a for m in measured)],
        clients=[c for c in Client.values if any(m[2] == c for m in measured)],
        checksums=[c for c in Checksum.values if any(m[3] == c for m in measured)],
    )

"""Turn one grid (`results.grid`, what the MaDDash JSON is built from too) into HTML.

The table is built in Python rather than in a template loop: a 30-node mesh has 870
cells x 2 bands per protocol, and Django's template engine would spend most of the
page's time budget on those inner loops. Every value is escaped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from html import escape
from urllib.parse import quote

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from webapp.results.cache import cached_aggregate
from webapp.results.choices import Auth, Client, Protocol
from webapp.results.grid.bands import GridBands, status_labels
from webapp.results.grid.queries import build_bands, grid_dimensions
from webapp.results.selectors.baselines import latest_link_baselines
from webapp.results.selectors.campaigns import CampaignStart

# MaDDash status codes (CheckConstants.java) and its colour-blind-safe default palette.
STATUS_NAMES = ("OK", "WARNING", "CRITICAL", "UNKNOWN", "NOT RUN")
STATUS_COLOURS = ("#009E73", "#F0E442", "#CC79A7", "#E69F00", "#56B4E9")
UNKNOWN, NOT_RUN = 3, 4

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


def format_gbps(value: float | None) -> str:
    return "no value" if value is None else f"{value:.2f} Gbps"


def status_name(status: int) -> str:
    return STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else f"STATUS {status}"


# Per status: the class of its band.
_STATUS_CLASS = {status: f"band s{status}" for status in range(NOT_RUN + 1)}


def _band_pieces(
    check_name: str, status: int, ok: int, failed: int, counts: dict[tuple[int, int], str]
) -> tuple[str, str, str, str]:
    """The fixed pieces of a band's <span> and of the words a screen reader hears, for bands of
    this check, status and counts (they recur all over a table): (span up to the value, span
    from the value up to the time, words up to the value, words after it).

    data-tip holds the tooltip's fields, one a line: check, value, status, count, time, message.
    `check_name` comes HTML-escaped; the rest is plain words.
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
    name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else f"STATUS {status}"
    return (
        f'<span class="{classes}" data-status="{status}" data-tip="{check_name}\n',
        f"\n{name}\n{count}\n",
        f"{check_name} ",
        f" {name}, {count}" if failed else f" {name}",
    )


class PairLinks:
    """History-page links for every cell: reverse() once per table, then fill in names."""

    def __init__(self) -> None:
        pattern = reverse("dashboard:pair", kwargs={"src": "SRC", "dst": "DST"})
        self._head, _, tail = pattern.partition("SRC")
        self._middle, _, self._end = tail.partition("DST")

    def href(self, src: str, dst: str) -> str:
        return f"{self._head}{quote(src, safe='')}{self._middle}{quote(dst, safe='')}{self._end}"

    def row_hrefs(self, names: list[str]) -> list[tuple[str, str]]:
        """Per source: (the part of its row's hrefs before the destination, after it)."""
        return [(f"{self._head}{quote(n, safe='')}{self._middle}", self._end) for n in names]


def of_link(value_gbps: float, link_gbps: float | None) -> str:
    """ " (25% of the link's 40.00)": the value as a fraction of the pair's link baseline."""
    if not link_gbps:
        return ""
    return f" ({100 * value_gbps / link_gbps:.0f}% of the link's {link_gbps:.2f})"


def build_table(
    grid: GridBands,
    slug: str,
    title: str,
    links: dict[tuple[str, str], float] | None = None,
) -> SafeString:
    """The grid as an HTML table; names are escaped and quoted once, not once per cell.
    `links`: each pair's latest link baseline, so a value reads as a fraction of it too."""
    links = links or {}
    check_names = [escape(n) for n in grid.check_names]
    names = [escape(n) for n in grid.names]
    quoted = [escape(quote(n, safe="")) for n in grid.names]
    hrefs = PairLinks().row_hrefs(grid.names)
    times: dict[int | None, str] = {}  # minute -> its text (a campaign spans few minutes)
    counts: dict[tuple[int, int], str] = {}
    parts = [
        f'<table class="grid" id="grid-{escape(slug)}" data-grid="{escape(grid.name)}">',
        f'<caption class="visually-hidden">{escape(title)}: rows are sources, columns are'
        " destinations; each cell has one band per check, top to bottom: "
        f"{escape(', '.join(grid.check_names))}.</caption>",
        '<thead><tr><td class="corner"><span>destination \u2192</span><span>source \u2193</span>'
        "</td>",
    ]
    parts.extend(f'<th scope="col" class="col"><span>{name}</span></th>' for name in names)
    parts.append("</tr></thead><tbody>")
    append = parts.append
    # Per (check, status, succeeded, failed): the band's fixed pieces (_band_html's), which
    # recur all over a table; per band only the value, time and message are put in.
    pieces: dict[tuple[int, int, int, int], tuple[str, str, str, str]] = {}
    checks = list(enumerate(check_names))
    for r, row_cells in enumerate(grid.cells):
        src = names[r]
        head, end = (escape(part) for part in hrefs[r])
        append(f'<tr><th scope="row" class="row">{src}</th>')
        for c, cell in enumerate(row_cells):
            if cell is None:
                append('<td class="self" aria-label="same node"></td>')
                continue
            dst = names[c]
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
                if value_gbps is None:
                    value = "no value"
                else:
                    value = f"{value_gbps:.2f} Gbps{of_link(value_gbps, link) if link else ''}"
                if not failed and value_gbps is not None and measurements <= 1:
                    message = ""  # it would only repeat the value
                elif message:
                    message = escape(" ".join(message.split()))
                bands.append(f'{span_head}{value}{span_middle}{when}\n{message}"></span>')
                spoken.append(f"{spoken_head}{value}{spoken_tail}")
            # Names come escaped and the rest of the label is plain words.
            append(
                f'<td><a class="cell" href="{head}{quoted[c]}{end}" aria-label="{src} to {dst}: '
                f'{"; ".join(spoken)}" data-src="{src}" data-dst="{dst}">{"".join(bands)}</a></td>'
            )
        append("</tr>")
    append("</tbody></table>")
    return mark_safe("".join(parts))  # every value above is escaped


def build_section(
    grid: GridBands, links: dict[tuple[str, str], float] | None = None
) -> GridSection:
    name = grid.name
    slug = "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-") or "grid"
    title = PROTOCOL_TITLES.get(name.lower(), name)
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
        table_html=build_table(grid, slug, title, links),
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


@cached_aggregate("grid-page")
def grid_page_data(
    *, window: str = "latest", auth: str = Auth.X509, client: str = Client.NATIVE
) -> GridPage:
    """A section per grid with results of this authorization and client (none: none such),
    and the authorizations and clients measured (none: an empty database); raises ValueError
    (window)."""
    measured = grid_dimensions()  # one query for the grids to show and the choices
    names = [p for p in Protocol.values if (p, auth, client) in measured]
    # As results.grid.queries.all_grid_bands, with the combinations read once.
    grids = build_bands(names, window, with_campaign=True, auth=auth, client=client)
    links = latest_link_baselines() if grids else {}
    return GridPage(
        sections=[build_section(grid, links) for grid in grids],
        auths=[a for a in Auth.values if any(m[1] == a for m in measured)],
        clients=[c for c in Client.values if any(m[2] == c for m in measured)],
    )

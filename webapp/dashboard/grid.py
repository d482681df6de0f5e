"""Turn one MaDDash grid (the JSON of `results.maddash.maddash_grid`) into an HTML table.

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


_NOT_RUN_CHECK = {"status": NOT_RUN, "message": "Check has not yet run"}


def _band_html(check_name: str, check: dict | None) -> tuple[str, str]:
    """One band's <span> and the words a screen reader hears.

    data-tip holds the tooltip's fields, one a line: check, value, status, count, time, message.
    """
    check = check or _NOT_RUN_CHECK
    status = int(check.get("status", NOT_RUN))
    ok = check.get("succeeded") or 0
    failed = check.get("failed") or 0
    value_gbps = check.get("value_gbps")
    classes = f"band s{status if 0 <= status <= NOT_RUN else UNKNOWN}"
    if failed:
        # Some transfers failed: hatched; none succeeded: also crossed out.
        classes += " failed" if ok else " failed allfailed"
    count = f"{ok}/{ok + failed} succeeded" if ok + failed else "no transfers"
    value = format_gbps(value_gbps)
    name = status_name(status)
    message = check.get("message") or ""
    if not failed and value_gbps is not None and check.get("measurements", 1) <= 1:
        message = ""  # it would only repeat the value
    tip = escape(
        f"{check_name}\n{value}\n{name}\n{count}\n"
        f"{format_time(check.get('prevCheckTime'))}\n{' '.join(message.split())}"
    )
    spoken = f"{check_name} {value} {name}" + (f", {count}" if failed else "")
    return f'<span class="{classes}" data-status="{status}" data-tip="{tip}"></span>', spoken


class PairLinks:
    """History-page links for every cell: reverse() once per table, then fill in names."""

    def __init__(self) -> None:
        pattern = reverse("dashboard:pair", kwargs={"src": "SRC", "dst": "DST"})
        self._head, _, tail = pattern.partition("SRC")
        self._middle, _, self._end = tail.partition("DST")

    def href(self, src: str, dst: str) -> str:
        return f"{self._head}{quote(src, safe='')}{self._middle}{quote(dst, safe='')}{self._end}"


def _cell_html(
    src: str, dst: str, checks: list | None, check_names: list[str], links: PairLinks
) -> str:
    if checks is None:
        return '<td class="self" aria-label="same node"></td>'
    bands = []
    spoken = []
    for index, name in enumerate(check_names):
        check = checks[index] if index < len(checks) else None
        band, words = _band_html(name, check)
        bands.append(band)
        spoken.append(words)
    href = links.href(src, dst)
    label = escape(f"{src} to {dst}: " + "; ".join(spoken))
    return (
        f'<td><a class="cell" href="{escape(href)}" aria-label="{label}"'
        f' data-src="{escape(src)}" data-dst="{escape(dst)}">{"".join(bands)}</a></td>'
    )


def _row_label(row: dict) -> str:
    return str((row.get("props") or {}).get("label") or row["name"])


def build_table(grid: dict, slug: str, title: str) -> SafeString:
    check_names = list(grid.get("checkNames") or [])
    columns = list(grid.get("columnNames") or [])
    column_props = list(grid.get("columnProps") or [])
    cells = grid.get("grid") or []
    links = PairLinks()
    parts = [
        f'<table class="grid" id="grid-{escape(slug)}" data-grid="{escape(grid["name"])}">',
        f'<caption class="visually-hidden">{escape(title)}: rows are sources, columns are'
        " destinations; each cell has one band per check, top to bottom: "
        f"{escape(', '.join(check_names))}.</caption>",
        '<thead><tr><td class="corner"><span>destination \u2192</span><span>source \u2193</span>'
        "</td>",
    ]
    for index, column in enumerate(columns):
        props = column_props[index] if index < len(column_props) else {}
        label = (props or {}).get("label") or column
        parts.append(f'<th scope="col" class="col"><span>{escape(str(label))}</span></th>')
    parts.append("</tr></thead><tbody>")
    for r, row in enumerate(grid.get("rows") or []):
        parts.append(f'<tr><th scope="row" class="row">{escape(_row_label(row))}</th>')
        row_cells = cells[r] if r < len(cells) else []
        for c, column in enumerate(columns):
            checks = row_cells[c] if c < len(row_cells) else None
            if checks is None and row["name"] != column:
                checks = []  # missing cell for a real pair: show it as NOT RUN
            parts.append(_cell_html(row["name"], column, checks, check_names, links))
        parts.append("</tr>")
    parts.append("</tbody></table>")
    return mark_safe("".join(parts))  # every value above is escaped


def count_measured(grid: dict) -> int:
    """Bands that hold a result (any status but NOT RUN)."""
    return sum(
        1
        for row in grid.get("grid") or []
        for checks in row
        if checks
        for check in checks
        if check and int(check.get("status", NOT_RUN)) != NOT_RUN
    )


def _global_report(grid: dict) -> dict:
    return (grid.get("report") or {}).get("global") or {}


def status_counts(grid: dict) -> list[tuple[str, int]]:
    """(status name, bands) for the statuses present, from MaDDash's report stats."""
    stats = _global_report(grid).get("stats") or []
    return [(STATUS_NAMES[i], int(n)) for i, n in enumerate(stats[: len(STATUS_NAMES)]) if n]


def build_section(grid: dict) -> GridSection:
    name = str(grid["name"])
    slug = "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-") or "grid"
    title = PROTOCOL_TITLES.get(name.lower(), name)
    labels = list(grid.get("statusLabels") or [])
    legend = [
        LegendEntry(
            status=i,
            name=STATUS_NAMES[i],
            label=str(labels[i]) if i < len(labels) and labels[i] else STATUS_NAMES[i],
            colour=STATUS_COLOURS[i],
        )
        for i in range(len(STATUS_NAMES))
    ]
    measured = count_measured(grid)
    # An empty window's lastUpdateTime is "now" (MaDDash semantics); do not show that.
    last = grid.get("lastUpdateTime") if measured else None
    return GridSection(
        name=name,
        slug=slug,
        title=title,
        check_names=list(grid.get("checkNames") or []),
        legend=legend,
        table_html=build_table(grid, slug, title),
        last_update=datetime.fromtimestamp(last, tz=UTC) if last else None,
        n_rows=len(grid.get("rows") or []),
        n_cols=len(grid.get("columnNames") or []),
        n_measured=measured,
        stats=status_counts(grid),
        problems=[str(p.get("name", "")) for p in _global_report(grid).get("problems") or []],
    )

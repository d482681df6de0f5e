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

from datetime import UTC, datetime
from functools import lru_cache
from urllib.parse import quote

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from webapp.dashboard.cell_age import Ages
from webapp.dashboard.compact_table import compact_table, group_row, group_starts
from webapp.dashboard.grid_layout import Layout
from webapp.results.grid.bands import GridBands
from webapp.results.grid.limits import NOT_RUN, STATUS_SHORT_NAMES, UNKNOWN

STATUS_NAMES = tuple(STATUS_SHORT_NAMES)
TABLE_TEMPLATE = "dashboard/_grid_table.html"


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
_SAME_NODE_START = '<td class="self gs" aria-label="same node"></td>'
_BAND_END = '"></span>'
_join = "".join


# A cell whose checks alert (docs/alerts.md): a badge in its link (and its <td>'s class,
# _cell_start).
_ALERT_BADGE = {
    state: f'<span class="alert-badge" aria-hidden="true" title="Alert: {state}">!</span>'
    for state in ("warning", "critical")
}


def table_context(grid: GridBands, layout: Layout, cell_link: tuple[str, str, str] | None) -> dict:
    """The table frame's context (_grid_table.html): its columns in the layout's order,
    each with whether a site group starts at it, the column groups, and the pair link's
    parts (the compact table's cells have none of their own)."""
    starts = {p for p in group_starts(layout.col_groups) if p}
    return {
        "columns": [(grid.names[c], p in starts) for p, c in enumerate(layout.cols)],
        "col_groups": layout.col_groups,
        "href": "|".join(cell_link or _pair_link_parts()),
    }


def build_table(
    grid: GridBands,
    slug: str,
    title: str,
    links: dict[tuple[str, str], float] | None = None,
    cell_link: tuple[str, str, str] | None = None,
    alerts: dict[tuple[str, str], str] | None = None,
    layout: Layout | None = None,
    ages: Ages | None = None,
) -> SafeString:
    """The grid as an HTML table. A cell is
    <td><a class="cell" href="HREF" aria-label="SRC to DST: WORDS" data-src="SRC"
    data-dst="DST">BANDS</a></td>: its row's and its column's parts are made once per table,
    by format_html; per cell only the words and bands are put in.
    `links`: each pair's latest link baseline, so a value reads as a fraction of it too.
    `cell_link`: a cell's URL around its two names (default: the pair page's).
    `alerts`: (src, dst) -> the state of the pair's alerting checks (warning, critical): the
    cell's <td> has class "alert alert-STATE" and its link a badge.
    `layout`: the rows and columns shown, their order and site groups (default: all, in the
    grid's order); above COMPACT_ABOVE of them, the compact table (compact_table.py).
    `ages`: mark overdue cells (class "old", data-age) and say each cell's age."""
    if layout is None:
        everything = list(range(len(grid.names)))
        layout = Layout(everything, everything, [len(everything)] * len(everything))
    context = table_context(grid, layout, cell_link)
    if layout.compact:
        return compact_table(grid, slug, title, layout, ages, alerts, context)
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
    group_rows = group_starts(layout.row_groups)
    col_starts = {p for p in group_starts(layout.col_groups) if p}
    times: dict[int | None, str] = {}  # minute -> its text (a campaign spans few minutes)
    counts: dict[tuple[int, int], str] = {}
    parts: list[str] = []
    append = parts.append
    # Per (check, status, succeeded, failed): the band's fixed pieces (_band_pieces'), which
    # recur all over a table; per band only the value, time and message are put in.
    pieces: dict[tuple[int, int, int, int], tuple[SafeString, ...]] = {}
    checks = list(enumerate(grid.check_names))
    for position, r in enumerate(layout.rows):
        if (group := group_rows.get(position)) is not None:
            append(group_row(group, len(layout.cols) + 1))
        row_cells = grid.cells[r]
        src = names[r]
        append(format_html('<tr><th scope="row" class="row">{}</th>', src))
        row_link = format_html('<a class="cell" href="{}{}{}', head, quoted[r], middle)
        row_href = "<td>" + row_link
        row_data = format_html('" data-src="{}', src)
        for p, c in enumerate(layout.cols[: layout.widths[position]]):
            cell = row_cells[c]
            if cell is None:
                append(_SAME_NODE_START if p in col_starts else _SAME_NODE)
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
            # Its age, when overdue or when the window shows no result (cell_age).
            age = ages.of(grid.names[r], grid.names[c], cell) if ages else None
            if age is not None:
                spoken.append(f"last measured {age[0]} ago{', overdue' if age[1] else ''}")
            state = alerts.get((grid.names[r], grid.names[c])) if alerts else None
            if state is not None:
                spoken.append(f"alert: {state}")
                bands.append(_ALERT_BADGE[state])
            if state or age or p in col_starts:
                td = _cell_start(state, age, p in col_starts)
                opening = td + row_link
            else:
                opening = row_href
            append(
                _join(
                    (
                        opening, href_tail, src, to_dst, "; ".join(spoken), row_data,
                        data_dst, _join(bands), "</a></td>",
                    )
                )
            )  # fmt: skip
        append("</tr>")
    context.update(grid=grid, slug=slug, title=title, body=mark_safe(_join(parts)))
    return mark_safe(render_to_string(TABLE_TEMPLATE, context).strip())


def _cell_start(state: str | None, age: tuple[str, bool] | None, group_start: bool) -> str:
    """A cell's <td ...> when it alerts, has an age to tell or starts a site group."""
    classes = ["alert", f"alert-{state}"] if state else []
    if age is not None and age[1]:
        classes.append("old")
    if group_start:
        classes.append("gs")
    attributes = f' data-alert="{state}"' if state else ""
    if age is not None:
        attributes += f' data-age="{age[0]}"'
    return f'<td class="{" ".join(classes)}"{attributes}>' if classes else f"<td{attributes}>"

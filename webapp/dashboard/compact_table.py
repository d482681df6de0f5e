"""The grid's compact table (issue 24): above grid_layout.COMPACT_ABOVE rows or columns.

Small square cells without links or words: a cell is
<td data-v="VALUES" data-m="MINUTE"><i class=sS></i>...</td>, one <i> per band coloured by
its status; what the full table's cells say in their links, labels and tooltips, the
table's attributes and grid.js put together on hover (the pair, each check's value, status,
transfers and time, the age) and on click (the pair's page). About a fifth of the full
table's bytes: the bench's 200-node page (two grids of 40,000 cells, two bands each) is
6.9 MB instead of 36.7 MB.

- data-v: each band's value in Gbps ("-": none); data-m: the minutes since the epoch when
  each band's latest measurement finished (one figure when they share it);
- data-f: each band's "succeeded/transfers", only when some transfer failed; data-x: the
  message of the first band that has one (failures);
- data-age: the cell's age when it is overdue or its bands hold no result (the pair's
  latest measurement before the window); class o: overdue;
- the table's class dense: above DENSE_ABOVE columns, 8-pixel cells;
- class n: every band NOT RUN (no <i>), x: the diagonal, gs: a site group's first column,
  alert alert-STATE: an alerting cell.
"""

from __future__ import annotations

from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from webapp.dashboard.cell_age import Ages
from webapp.dashboard.grid_layout import Group, Layout
from webapp.results.grid.bands import GridBands
from webapp.results.grid.limits import NOT_RUN, STATUS_SHORT_NAMES

TABLE_TEMPLATE = "dashboard/_grid_table.html"
DENSE_ABOVE = 100  # more columns: smaller cells still (200 columns fit 1920 pixels)
_BAND = {status: f"<i class=s{status}></i>" for status in range(NOT_RUN + 1)}
_BAND_FAILED = {status: f'<i class="s{status} failed"></i>' for status in range(NOT_RUN + 1)}
_BAND_ALL_FAILED = {
    status: f'<i class="s{status} failed allfailed"></i>' for status in range(NOT_RUN + 1)
}


def _td(classes: list[str], attributes: list[str]) -> str:
    head = "<td"
    if classes:
        head += ' class="' + " ".join(classes) + '"'
    if attributes:
        head += " " + " ".join(attributes)
    return head + ">"


def compact_rows(
    grid: GridBands,
    layout: Layout,
    ages: Ages | None,
    alerts: dict[tuple[str, str], str] | None,
) -> str:
    """The body's rows (group header rows included)."""
    names = grid.names
    escaped = [escape(name) for name in names]
    group_rows = group_starts(layout.row_groups)
    col_starts = {p for p in group_starts(layout.col_groups) if p}
    span = len(layout.cols) + 1
    parts: list[str] = []
    append = parts.append
    for position, r in enumerate(layout.rows):
        group = group_rows.get(position)
        if group is not None:
            append(group_row(group, span))
        append(f'<tr><th scope="row" class="row">{escaped[r]}</th>')
        row_cells = grid.cells[r]
        for p, c in enumerate(layout.cols[: layout.widths[position]]):
            cell = row_cells[c]
            classes = ["gs"] if p in col_starts else []
            if cell is None:
                append(_td(["x", *classes], []))
                append("</td>")
                continue
            attributes: list[str] = []
            state = alerts.get((names[r], names[c])) if alerts else None
            if state is not None:
                classes += ["alert", f"alert-{state}"]
            age = ages.of(names[r], names[c], cell) if ages else None
            measured = [band for band in cell if band[0] != NOT_RUN]
            if age is not None:
                attributes.append(f'data-age="{age[0]}"')
                if age[1]:
                    classes.append("o")
            if not measured:
                append(_td(["n", *classes], attributes))
                append("</td>")
                continue
            values = " ".join("-" if b[3] is None else f"{b[3]:.2f}" for b in cell)
            minutes = {b[2] // 60 if b[2] else 0 for b in cell}
            when = (
                str(minutes.pop())
                if len(minutes) == 1
                else " ".join(str(b[2] // 60 if b[2] else 0) for b in cell)
            )
            attributes[:0] = [f'data-v="{values}"', f'data-m="{when}"']
            bands = []
            failed = False
            message = ""
            for status, text, _, _, ok, bad, _ in cell:
                if bad:
                    failed = True
                    bands.append((_BAND_FAILED if ok else _BAND_ALL_FAILED)[status])
                    message = message or text
                else:
                    bands.append(_BAND[status])
            if failed:
                counts = " ".join(f"{b[4]}/{b[4] + b[5]}" for b in cell)
                attributes.append(f'data-f="{counts}"')
                if message:
                    attributes.append(f'data-x="{escape(" ".join(message.split()))}"')
            append(_td(classes, attributes))
            append("".join(bands))
            append("</td>")
        append("</tr>")
    return "".join(parts)


def group_starts(groups: list[Group]) -> dict[int, Group]:
    """Position of each group's first row or column -> the group."""
    starts: dict[int, Group] = {}
    position = 0
    for group in groups:
        starts[position] = group
        position += group.size
    return starts


def group_row(group: Group, span: int) -> str:
    """A site group's header row, across the table."""
    matched = " matched" if group.matched else ""
    label = escape(group.label) + (" (matching)" if group.matched else "")
    return (
        f'<tr class="group{matched}"><th scope="rowgroup" class="group" colspan="{span}">'
        f"{label}</th></tr>"
    )


def compact_table(
    grid: GridBands,
    slug: str,
    title: str,
    layout: Layout,
    ages: Ages | None,
    alerts: dict[tuple[str, str], str] | None,
    context: dict,
) -> SafeString:
    body = compact_rows(grid, layout, ages, alerts)
    statuses = "|".join(STATUS_SHORT_NAMES)
    return mark_safe(
        render_to_string(
            TABLE_TEMPLATE,
            {
                **context,
                "grid": grid,
                "slug": slug,
                "title": title,
                "compact": True,
                "dense": len(layout.cols) > DENSE_ABOVE,
                "statuses": statuses,
                "body": mark_safe(body),
            },
        ).strip()
    )

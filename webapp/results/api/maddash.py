"""MaDDash-compatible JSON of the grids (results.grid): the grid, row, cell and check
resources in MaDDash's shape, made from what the grid's selectors read (no queries here).

The JSON keeps MaDDash's names (name, statusLabels, lastUpdateTime, columnNames, columnProps,
checkNames, grid, rows, report) so MaDDash-era clients can read it; cells carry extra keys
(value_gbps, succeeded, failed, measurements, streams) for our own pages.
"""

from collections.abc import Iterable
from urllib.parse import quote

from django.utils import timezone

from webapp.results.choices import DIMENSION_DEFAULTS, Auth, Checksum, Client, Scope
from webapp.results.grid.bands import (
    NOT_RUN_BAND,
    Band,
    GridBands,
    check_name,
    epoch,
    status_labels,
)
from webapp.results.grid.limits import CRITICAL, STATUS_SHORT_NAMES, WARNING, band_status
from webapp.results.grid.queries import CheckHistory, UnknownGrid


def dimensions_query(
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
    scope: str = Scope.HOST,
) -> str:
    """'?auth=token&client=gfal2&checksum=adler32' for the dimensions not at their defaults
    (and '&scope=site' for a site grid's); '' for none."""
    chosen = {"auth": auth, "client": client, "checksum": checksum}
    changed = [(k, v) for k, v in chosen.items() if v != DIMENSION_DEFAULTS[k]]
    if scope != Scope.HOST:
        changed.append(("scope", scope))
    return "?" + "&".join(f"{k}={v}" for k, v in changed) if changed else ""


def check_uri(
    grid: str,
    row: str,
    col: str,
    check: str,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> str:
    parts = "/".join(quote(part, safe="") for part in (grid, row, col, check))
    return f"/maddash/grids/{parts}{dimensions_query(auth, client, checksum)}"


def _check_dict(band: Band) -> dict:
    status, message, last, value, succeeded, failed, measurements = band
    return {
        "message": message,
        "status": status,
        "prevCheckTime": last,
        "value_gbps": value,
        "succeeded": succeeded,
        "failed": failed,
        "measurements": measurements,
    }


def _report(bands: GridBands) -> dict:
    """MaDDash's report: counts per status, and sites all of whose checks are CRITICAL."""
    problems = [
        {
            "name": f"{direction} transfers of {node} all failing or below threshold",
            "severity": 2,
            "category": "PERFORMANCE",
            "solutions": [f"Check the storage server and network of {node}"],
        }
        for direction, node in bands.failing
    ]
    stats = list(bands.stats)
    severity = 2 if problems else (1 if stats[CRITICAL] or stats[WARNING] else 0)
    return {"global": {"stats": stats, "severity": severity, "problems": problems}, "sites": {}}


class _Uris:
    """The URIs of one grid's resources, names quoted once; per column, the tails of its
    checks' URIs and history links (a cell's are its row's head and these)."""

    def __init__(self, bands: GridBands) -> None:
        self.grid = "/maddash/grids/" + quote(bands.name, safe="")
        self.query = dimensions_query(bands.auth, bands.client, bands.checksum, bands.scope)
        self.sites = bands.scope == Scope.SITE
        self.quoted = [quote(n, safe="") for n in bands.names]
        self.checks = [
            (k, label, quote(label, safe=""))
            for k, label in zip(bands.streams, bands.check_names, strict=True)
        ]
        # Per column: per check, (uri tail, history tail, streams, check name).
        self.column_checks = [
            [
                (
                    f"/{quoted}/{quoted_label}{self.query}",
                    name if self.sites else f"{name}/?protocol={bands.name}&streams={k}",
                    k,
                    label,
                )
                for k, label, quoted_label in self.checks
            ]
            for quoted, name in zip(self.quoted, bands.names, strict=True)
        ]

    def row_history(self, name: str) -> str:
        """A row's history links' head: the pair page's; a site grid's, the grid page's host
        grid of the two sites (the drill-down)."""
        return f"/?scope=host&sites={name}," if self.sites else f"/pairs/{name}/"

    def row(self, r: int) -> str:
        """A row's URI; a check's URI is its row's without the query, and the check's tail."""
        return f"{self.grid}/{self.quoted[r]}"

    def row_with_query(self, r: int) -> str:
        return f"{self.grid}/{self.quoted[r]}{self.query}"

    def cell(self, r: int, c: int) -> str:
        return f"{self.grid}/{self.quoted[r]}/{self.quoted[c]}{self.query}"


def _check_rows(
    bands: GridBands, uris: _Uris, rows: Iterable[int]
) -> list[list[list[dict] | None]]:
    """Per row of `rows`: the checks of each of its cells in MaDDash's shape plus our keys
    (None on the diagonal). The grid's hot loop: one dict per band, URIs from precomputed
    heads and tails."""
    found = []
    for r in rows:
        row_uri = uris.row(r)
        row_history = uris.row_history(bands.names[r])
        cells: list[list[dict] | None] = []
        for cell, column in zip(bands.cells[r], uris.column_checks, strict=True):
            if cell is None:
                cells.append(None)
                continue
            cells.append(
                [
                    {
                        "message": band[1],
                        "status": band[0],
                        "prevCheckTime": band[2],
                        "value_gbps": band[3],
                        "succeeded": band[4],
                        "failed": band[5],
                        "measurements": band[6],
                        "uri": row_uri + uri_tail,
                        "history_uri": row_history + history_tail,
                        "streams": k,
                        "check": label,
                    }
                    for band, (uri_tail, history_tail, k, label) in zip(cell, column, strict=True)
                ]
            )
        found.append(cells)
    return found


def _checks(bands: GridBands, uris: _Uris, r: int, c: int) -> list[dict] | None:
    """The checks of cell (r, c) in MaDDash's shape plus our keys; None on the diagonal."""
    return _check_rows(bands, uris, [r])[0][c]


def grid_document(bands: GridBands) -> dict:
    """A grid in MaDDash's shape (the grid resource) from its bands."""
    name = bands.name
    names = bands.names
    uris = _Uris(bands)
    return {
        "name": name,
        "window": bands.window,
        "auth": bands.auth,
        "client": bands.client,
        "checksum": bands.checksum,
        **({"scope": bands.scope} if bands.scope != Scope.HOST else {}),
        "statusLabels": status_labels(bands),
        "lastUpdateTime": bands.last_update or epoch(timezone.now()),
        "columnNames": list(names),
        "columnProps": [{"label": n} for n in names],
        "checkNames": list(bands.check_names),
        "grid": _check_rows(bands, uris, range(len(names))),
        "rows": [
            {"name": n, "uri": uris.row_with_query(r), "props": {"label": n}}
            for r, n in enumerate(names)
        ],
        "report": _report(bands),
    }


def _row_index(bands: GridBands, row: str) -> int:
    try:
        return bands.names.index(row)
    except ValueError:
        raise UnknownGrid(f"no row {row!r} in grid {bands.name!r}") from None


def row_document(bands: GridBands, row: str) -> dict:
    """One row of a grid, like MaDDash's row resource: `cells[]`, one per destination, each
    with its URI and its checks. Raises UnknownGrid (no such row)."""
    uris = _Uris(bands)
    r = _row_index(bands, row)
    checks = _check_rows(bands, uris, [r])[0]
    return {
        "name": row,
        "gridName": bands.name,
        "window": bands.window,
        "auth": bands.auth,
        "client": bands.client,
        "checksum": bands.checksum,
        "uri": uris.row_with_query(r),
        "props": {"label": row},
        "checkNames": list(bands.check_names),
        "cells": [
            {"name": col, "uri": uris.cell(r, c), "checks": checks[c]}
            for c, col in enumerate(bands.names)
            if c != r
        ],
    }


def cell_document(bands: GridBands, row: str, col: str) -> dict:
    """One cell, like MaDDash's cell resource: its `checks[]` (each with its URI). Raises
    UnknownGrid (no such row, column or cell)."""
    uris = _Uris(bands)
    r, c = _row_index(bands, row), _row_index(bands, col)
    if r == c:
        raise UnknownGrid(f"no cell {row!r} -> {col!r} in grid {bands.name!r}")
    return {
        "gridName": bands.name,
        "rowName": row,
        "colName": col,
        "window": bands.window,
        "auth": bands.auth,
        "client": bands.client,
        "checksum": bands.checksum,
        "uri": uris.cell(r, c),
        "checks": _checks(bands, uris, r, c),
    }


def check_document(check: CheckHistory) -> dict:
    """One check of one cell with a page of its history, like MaDDash's check resource: the
    current state is the latest measurement's; history is newest first."""
    grid, row, col = check.grid, check.row, check.col
    dimensions = {"auth": check.auth, "client": check.client, "checksum": check.checksum}
    # Off the defaults: '(token, native)' as before the checksum existed, its value after.
    named = [check.auth, check.client]
    if check.checksum != DIMENSION_DEFAULTS["checksum"]:
        named.append(check.checksum)
    off_defaults = any(v != DIMENSION_DEFAULTS[k] for k, v in dimensions.items())

    def result(m: dict | None) -> dict:
        if m is None:
            return _check_dict(NOT_RUN_BAND)
        ok, bad, value = m["succeeded"], m["failed"], m["throughput_gbps"]
        status, message = band_status(ok, bad, value, 1, check.limits, check.reasons.get(m["id"]))
        return _check_dict((status, message, epoch(m["finished"]), value, ok, bad, 1))

    current = result(check.latest)
    history = []
    for m in check.page:
        item = result(m)
        history.append(
            {
                "time": item["prevCheckTime"],
                "returnCode": item["status"],
                "status": item["status"],
                "message": item["message"],
                "returnCodeCount": 1,
                "returnParams": {
                    "Average": m["throughput_gbps"],
                    "Makespan": m["makespan_gbps"],
                    "RTT_ms": m["rtt_ms"],
                    "Succeeded": m["succeeded"],
                    "Failed": m["failed"],
                },
            }
        )
    label = check_name(check.streams)
    return {
        "gridName": grid,
        "rowName": row,
        "colName": col,
        "checkName": label,
        **dimensions,
        "description": f"{grid} third-party-copy throughput with {label}, {row} to {col}"
        + (f" ({', '.join(named)})" if off_defaults else ""),
        "prevCheckTime": current["prevCheckTime"],
        "nextCheckTime": None,
        "status": current["status"],
        "returnCode": current["status"],
        "returnCodeCount": 1,
        "message": current["message"],
        "statusShortName": STATUS_SHORT_NAMES[current["status"]],
        "type": "tpcbench",
        "params": {"graphUrl": f"/pairs/{quote(row)}/{quote(col)}/"},
        "historyPageCount": -(-check.total // check.per_page),
        "historyResultsPerPage": check.per_page,
        "history": history,
        "uri": check_uri(grid, row, col, label, **dimensions),
    }

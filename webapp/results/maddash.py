"""MaDDash-compatible grids: one per protocol, a band per stream setting in each cell.

The JSON keeps MaDDash's names (name, statusLabels, lastUpdateTime, columnNames, columnProps,
checkNames, grid, rows, report) so MaDDash-era clients can read it; cells carry extra keys
(value_gbps, succeeded, failed, measurements, streams) for our own pages.
"""

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from django.conf import settings
from django.db import connection
from django.db.models import Avg, Count, Max, Sum
from django.utils import timezone

from results.cache import cached_aggregate
from results.choices import Outcome, Protocol
from results.models import Measurement, Node, Threshold, Transfer
from results.selectors import window_condition
from results.windows import parse_window

OK, WARNING, CRITICAL, UNKNOWN, NOT_RUN = 0, 1, 2, 3, 4
STATUS_SHORT_NAMES = ["OK", "WARNING", "CRITICAL", "UNKNOWN", "NOT RUN"]
# Bands of an empty grid: the orchestrator's default stream settings.
DEFAULT_STREAM_SETTINGS = (8, 1)


_CHECK = re.compile(r"^([1-9][0-9]{0,3}) streams?$")


class UnknownGrid(LookupError):
    """No grid of that name (grid names are protocol names)."""


@dataclass(frozen=True)
class Limits:
    ok_gbps: float
    warning_gbps: float

    def status(self, value_gbps: float) -> int:
        if value_gbps >= self.ok_gbps:
            return OK
        return WARNING if value_gbps >= self.warning_gbps else CRITICAL


def check_name(streams: int) -> str:
    return f"{streams} stream" if streams == 1 else f"{streams} streams"


def check_uri(grid: str, row: str, col: str, check: str) -> str:
    return "/maddash/grids/" + "/".join(quote(part, safe="") for part in (grid, row, col, check))


def parse_check_name(check: str) -> int | None:
    """'8 streams' (or '8+streams', as MaDDash URIs spell spaces) -> 8; None if not a check."""
    match = _CHECK.match(check.replace("+", " ").strip())
    return int(match.group(1)) if match else None


def maddash_grid_names() -> list[str]:
    """Protocols that have at least one measurement, in the order of Protocol (https first)."""
    return [p.value for p in Protocol if Measurement.objects.filter(protocol=p.value).exists()]


def _limits_resolver(protocol: str):
    """(src_id, dst_id) -> Limits, the most specific Threshold winning over the defaults."""
    default = Limits(settings.TPCBENCH_DEFAULT_OK_GBPS, settings.TPCBENCH_DEFAULT_WARNING_GBPS)
    rows = {
        (t.src_id, t.dst_id): Limits(t.ok_gbps, t.warning_gbps)
        for t in Threshold.objects.filter(protocol=protocol)
    }
    grid_default = rows.get((None, None), default)

    def resolve(src_id: int, dst_id: int) -> Limits:
        for key in ((src_id, dst_id), (src_id, None), (None, dst_id)):
            if key in rows:
                return rows[key]
        return grid_default

    return grid_default, resolve


def _epoch(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


def _check(row: dict | None, limits: Limits, reason: tuple[str, str] | None) -> dict:
    """One band of one cell: status and message from the window's aggregate of a pair."""
    if row is None:
        return {
            "message": "No measurement in this window",
            "status": NOT_RUN,
            "prevCheckTime": None,
            "value_gbps": None,
            "succeeded": 0,
            "failed": 0,
            "measurements": 0,
        }
    succeeded, failed, value = row["succeeded"], row["failed"], row["value"]
    total = succeeded + failed
    many = row["measurements"] > 1
    if succeeded == 0 and failed > 0:
        error_class, message = reason or ("unknown", "")
        status = CRITICAL
        text = f"All {failed} transfers failed: {error_class}"
        if message:
            text += f": {message}"
    elif value is None:
        status, text = UNKNOWN, "No transfer result"
    else:
        status = limits.status(value)
        prefix = "Average throughput" if many else "Throughput"
        text = f"{prefix} {value:.2f} Gbps"
        if many:
            text += f" over {row['measurements']} measurements"
        if failed:
            status = max(status, WARNING)
            text += f"; {failed}/{total} failed"
    return {
        "message": text,
        "status": status,
        "prevCheckTime": _epoch(row["last"]),
        "value_gbps": value,
        "succeeded": succeeded,
        "failed": failed,
        "measurements": row["measurements"],
    }


def _failure_reasons(condition, protocol: str) -> dict[tuple[int, int, int], tuple[str, str]]:
    """(src_id, dst_id, streams) -> (error_class, message) of the latest all-failed measurement."""
    rows = (
        Transfer.objects.filter(
            outcome=Outcome.FAILURE,
            measurement__in=Measurement.objects.filter(
                condition, protocol=protocol, succeeded=0, failed__gt=0
            ).order_by(),
        )
        .order_by(
            "measurement__src_id",
            "measurement__dst_id",
            "measurement__streams",
            "-measurement__started",
            "index",
        )
        .values_list(
            "measurement__src_id",
            "measurement__dst_id",
            "measurement__streams",
            "error_class",
            "message",
        )
    )
    if connection.features.can_distinct_on_fields:  # PostgreSQL: one row per cell
        rows = rows.distinct("measurement__src_id", "measurement__dst_id", "measurement__streams")
    reasons: dict[tuple[int, int, int], tuple[str, str]] = {}
    for s, d, k, error_class, message in rows:
        reasons.setdefault((s, d, k), (error_class or "unknown", message))  # first = latest
    return reasons


def _report(grid: list[list], names: list[str]) -> dict:
    """MaDDash's report: counts per status, and sites all of whose checks are CRITICAL."""
    stats = [0] * 6
    problems = []
    outgoing: dict[str, list[int]] = {n: [] for n in names}
    incoming: dict[str, list[int]] = {n: [] for n in names}
    for r, row in enumerate(grid):
        for c, cell in enumerate(row):
            for check in cell or []:
                stats[check["status"]] += 1
                outgoing[names[r]].append(check["status"])
                incoming[names[c]].append(check["status"])
    for name in names:
        for direction, statuses in (("Outgoing", outgoing[name]), ("Incoming", incoming[name])):
            if statuses and all(s == CRITICAL for s in statuses):
                problems.append(
                    {
                        "name": f"{direction} transfers of {name} all failing or below threshold",
                        "severity": 2,
                        "category": "PERFORMANCE",
                        "solutions": [f"Check the storage server and network of {name}"],
                    }
                )
    severity = 2 if problems else (1 if stats[CRITICAL] or stats[WARNING] else 0)
    return {"global": {"stats": stats, "severity": severity, "problems": problems}, "sites": {}}


@cached_aggregate("maddash-grid")
def maddash_grid(*, name: str, window: str = "latest") -> dict:
    """The grid of protocol `name` over `window`; raises UnknownGrid or ValueError (window)."""
    if name not in Protocol.values:
        raise UnknownGrid(
            f"no grid named {name!r}; grids are named by protocol: " + ", ".join(Protocol.values)
        )
    parsed = parse_window(window)
    condition = window_condition(parsed)
    aggregates = (
        Measurement.objects.filter(condition, protocol=name)
        .order_by()
        .values("src_id", "dst_id", "streams")
        .annotate(
            value=Avg("throughput_gbps"),
            succeeded=Sum("succeeded"),
            failed=Sum("failed"),
            measurements=Count("*"),
            last=Max("finished"),
        )
    )
    cells = {(a["src_id"], a["dst_id"], a["streams"]): a for a in aggregates}
    reasons = (
        _failure_reasons(condition, name)
        if any(a["succeeded"] == 0 and a["failed"] > 0 for a in cells.values())
        else {}
    )
    nodes = list(Node.objects.order_by("name").values_list("id", "name"))
    grid_limits, limits_for = _limits_resolver(name)

    stream_settings = sorted({k for (_, _, k) in cells} or DEFAULT_STREAM_SETTINGS, reverse=True)
    check_names = [check_name(k) for k in stream_settings]
    names = [n for _, n in nodes]
    grid = []
    for src_id, src_name in nodes:
        row = []
        for dst_id, dst_name in nodes:
            if src_id == dst_id:
                row.append(None)
                continue
            limits = limits_for(src_id, dst_id)
            band = []
            for streams, label in zip(stream_settings, check_names, strict=True):
                key = (src_id, dst_id, streams)
                check = _check(cells.get(key), limits, reasons.get(key))
                check["uri"] = check_uri(name, src_name, dst_name, label)
                check["history_uri"] = (
                    f"/pairs/{src_name}/{dst_name}/?protocol={name}&streams={streams}"
                )
                check["streams"] = streams
                check["check"] = label
                band.append(check)
            row.append(band)
        grid.append(row)

    last = max((a["last"] for a in cells.values()), default=None)
    ok, warning = grid_limits.ok_gbps, grid_limits.warning_gbps
    return {
        "name": name,
        "window": parsed.label,
        "statusLabels": [
            f"Throughput >= {ok:g} Gbps",
            f"Throughput >= {warning:g} Gbps and < {ok:g} Gbps, or some transfers failed",
            f"Throughput < {warning:g} Gbps, or every transfer failed",
            "Unable to retrieve data",
            "Check has not yet run",
        ],
        "lastUpdateTime": _epoch(last) or _epoch(timezone.now()),
        "columnNames": names,
        "columnProps": [{"label": n} for n in names],
        "checkNames": check_names,
        "grid": grid,
        "rows": [{"name": n, "uri": f"/api/v1/nodes/{n}/", "props": {"label": n}} for n in names],
        "report": _report(grid, names),
    }


def summarize_statuses(grid: dict) -> Counter:
    """Counts per status short name, for the page's summary line."""
    return Counter(
        STATUS_SHORT_NAMES[check["status"]]
        for row in grid["grid"]
        for cell in row
        for check in (cell or [])
    )


def maddash_check(
    *, grid: str, row: str, col: str, check: str, page: int = 0, per_page: int = 10
) -> dict:
    """One check of one cell with its history, like MaDDash's check resource.

    The current state is the latest measurement's; history is newest first, paged.
    Raises UnknownGrid when the grid, a node or the check does not exist.
    """
    streams = parse_check_name(check)
    if grid not in Protocol.values or streams is None:
        raise UnknownGrid(f"no check {check!r} in grid {grid!r}")
    nodes = dict(Node.objects.filter(name__in=[row, col]).values_list("name", "id"))
    if row not in nodes or col not in nodes or row == col:
        raise UnknownGrid(f"no cell {row!r} -> {col!r} in grid {grid!r}")
    measurements = Measurement.objects.filter(
        protocol=grid, src_id=nodes[row], dst_id=nodes[col], streams=streams
    ).order_by("-started", "-id")
    total = measurements.count()
    chosen = list(
        measurements.values(
            "id", "finished", "throughput_gbps", "makespan_gbps", "rtt_ms", "succeeded", "failed"
        )[page * per_page : (page + 1) * per_page]
    )
    if page > 0 or not chosen:
        latest = measurements.values(
            "id", "finished", "throughput_gbps", "makespan_gbps", "rtt_ms", "succeeded", "failed"
        ).first()
    else:
        latest = chosen[0]
    failing = [m["id"] for m in [*chosen, latest] if m and m["succeeded"] == 0 and m["failed"]]
    reasons: dict[int, tuple[str, str]] = {}
    for measurement_id, error_class, message in (
        Transfer.objects.filter(measurement_id__in=failing, outcome=Outcome.FAILURE)
        .order_by("measurement_id", "index")
        .values_list("measurement_id", "error_class", "message")
    ):
        reasons.setdefault(measurement_id, (error_class or "unknown", message))
    _, limits_for = _limits_resolver(grid)
    limits = limits_for(nodes[row], nodes[col])

    def result(m: dict | None) -> dict:
        aggregate = m and {
            "succeeded": m["succeeded"],
            "failed": m["failed"],
            "value": m["throughput_gbps"],
            "measurements": 1,
            "last": m["finished"],
        }
        return _check(aggregate, limits, reasons.get(m["id"]) if m else None)

    current = result(latest)
    history = []
    for m in chosen:
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
    label = check_name(streams)
    return {
        "gridName": grid,
        "rowName": row,
        "colName": col,
        "checkName": label,
        "description": f"{grid} third-party-copy throughput with {label}, {row} to {col}",
        "prevCheckTime": current["prevCheckTime"],
        "nextCheckTime": None,
        "status": current["status"],
        "returnCode": current["status"],
        "returnCodeCount": 1,
        "message": current["message"],
        "statusShortName": STATUS_SHORT_NAMES[current["status"]],
        "type": "tpcbench",
        "params": {"graphUrl": f"/pairs/{quote(row)}/{quote(col)}/"},
        "historyPageCount": -(-total // per_page),
        "historyResultsPerPage": per_page,
        "history": history,
        "uri": check_uri(grid, row, col, label),
    }

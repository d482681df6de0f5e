"""MaDDash-compatible grids: one per protocol, a band per stream setting in each cell.

The JSON keeps MaDDash's names (name, statusLabels, lastUpdateTime, columnNames, columnProps,
checkNames, grid, rows, report) so MaDDash-era clients can read it; cells carry extra keys
(value_gbps, succeeded, failed, measurements, streams) for our own pages.
"""

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from operator import itemgetter
from urllib.parse import quote

from django.conf import settings
from django.db import connection
from django.db.models import Avg, Count, Func, IntegerField, Max, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from results.cache import cached_aggregate
from results.choices import CampaignState, Outcome, Protocol
from results.models import Measurement, Node, Threshold, Transfer
from results.selectors import (
    LATEST_CAMPAIGN_SQL,
    CampaignStart,
    latest_campaign,
    plain_rows,
    window_condition,
)
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
    link_gbps: float | None = None  # the link capacity these are fractions of, if they are

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
    if not connection.features.supports_slicing_ordering_in_compound:  # one query each
        return [p for p in Protocol.values if Measurement.objects.filter(protocol=p).exists()]
    # One query: a LIMIT 1 probe per protocol (each an index lookup), UNION ALL.
    probes = [
        Measurement.objects.filter(protocol=p).order_by().values_list("protocol", flat=True)[:1]
        for p in Protocol.values
    ]
    found = set(probes[0].union(*probes[1:], all=True))
    return [p for p in Protocol.values if p in found]


# (grid-wide Limits, (src_id, dst_id) -> Limits, whether the defaults differ per pair's link)
Resolver = tuple[Limits, Callable, bool]


def _limits_resolvers(protocols: list[str], links: dict[int, float | None]) -> dict[str, Resolver]:
    """Per protocol: its grid-wide Limits and (src_id, dst_id) -> Limits, the most specific
    Threshold winning over the defaults. One query for all the protocols.

    `links`: node id -> link capacity in Gbit/s (None: unknown)."""
    rows = (
        Threshold.objects.filter(protocol__in=protocols)
        .order_by()
        .values_list("protocol", "src_id", "dst_id", "ok_gbps", "warning_gbps")
    )
    return _resolvers_from(protocols, rows, links)


def _link_defaults(links: dict[int, float | None]) -> tuple[Callable, Limits, bool]:
    """The default limits when no Threshold row applies: fractions of the smaller known link
    of a pair (TPCBENCH_OK_FRACTION / _WARNING_FRACTION), else the absolute settings.

    Returns (src_id, dst_id) -> Limits, the limits to show for the grid, and whether they
    differ per pair (nodes with different or unknown capacities)."""
    absolute = Limits(settings.TPCBENCH_DEFAULT_OK_GBPS, settings.TPCBENCH_DEFAULT_WARNING_GBPS)
    known = {node: link for node, link in links.items() if link}
    ok_fraction = settings.TPCBENCH_OK_LINK_FRACTION
    warning_fraction = settings.TPCBENCH_WARNING_LINK_FRACTION

    def of_link(link: float) -> Limits:
        return Limits(ok_fraction * link, warning_fraction * link, link)

    if not known:
        return (lambda src_id, dst_id: absolute), absolute, False
    capacities = set(known.values())
    if len(capacities) == 1 and len(known) == len(links):  # one capacity everywhere
        shown = of_link(next(iter(capacities)))
        return (lambda src_id, dst_id: shown), shown, False

    def for_pair(src_id: int, dst_id: int) -> Limits:
        ends = [known[n] for n in (src_id, dst_id) if n in known]
        return of_link(min(ends)) if ends else absolute

    return for_pair, absolute, True


def _resolvers_from(
    protocols: list[str], thresholds: Iterable[tuple], links: dict[int, float | None]
) -> dict[str, Resolver]:
    """_limits_resolvers() from Threshold rows (protocol, src_id, dst_id, ok, warning)."""
    link_limits, link_shown, per_link = _link_defaults(links)
    rows: dict[str, dict[tuple, Limits]] = {p: {} for p in protocols}
    for protocol, src_id, dst_id, ok_gbps, warning_gbps in thresholds:
        rows[protocol][(src_id, dst_id)] = Limits(ok_gbps, warning_gbps)
    resolvers = {}
    for protocol, specific in rows.items():
        grid_row = specific.pop((None, None), None)  # an admin's grid-wide row beats the links

        def resolve(src_id: int, dst_id: int, specific=specific, grid_row=grid_row):
            if specific:
                for key in ((src_id, dst_id), (src_id, None), (None, dst_id)):
                    if key in specific:
                        return specific[key]
            return grid_row if grid_row is not None else link_limits(src_id, dst_id)

        if grid_row is not None:
            resolvers[protocol] = (grid_row, resolve, False)
        else:
            resolvers[protocol] = (link_shown, resolve, per_link)
    return resolvers


def _limits_resolver(protocol: str, links: dict[int, float | None]) -> Resolver:
    return _limits_resolvers([protocol], links)[protocol]


def _epoch(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


NOT_RUN_MESSAGE = "No measurement in this window"


def _status_message(
    succeeded: int,
    failed: int,
    value: float | None,
    measurements: int,
    limits: Limits,
    reason: tuple[str, str] | None,
) -> tuple[int, str]:
    """Status and message of one band from the window's aggregate of a pair."""
    if succeeded == 0 and failed > 0:
        error_class, message = reason or ("unknown", "")
        text = f"All {failed} transfers failed: {error_class}"
        return CRITICAL, f"{text}: {message}" if message else text
    if value is None:
        return UNKNOWN, "No transfer result"
    status = limits.status(value)
    if measurements > 1:
        text = f"Average throughput {value:.2f} Gbps over {measurements} measurements"
    else:
        text = f"Throughput {value:.2f} Gbps"
    if failed:
        if status == OK:
            status = WARNING
        text += f"; {failed}/{succeeded + failed} failed"
    return status, text


# A band of a cell, compact (cheap to compute, cache and walk):
# (status, message, prevCheckTime, value_gbps, succeeded, failed, measurements).
Band = tuple[int, str, int | None, float | None, int, int, int]
NOT_RUN_BAND: Band = (NOT_RUN, NOT_RUN_MESSAGE, None, None, 0, 0, 0)


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


class EpochSeconds(Func):
    """Whole seconds since 1970 of a timestamp, computed by PostgreSQL (no datetime parsing).

    Only used on PostgreSQL; elsewhere the timestamp is fetched and converted in Python.
    """

    template = "FLOOR(EXTRACT(EPOCH FROM %(expressions)s))::bigint"
    output_field = IntegerField()


def _cell_aggregates(condition: Q, protocols: list[str]) -> list[tuple]:
    """(protocol, src_id, dst_id, streams, value, succeeded, failed, measurements, last epoch).

    One aggregate query for every grid; rows come straight from the cursor as tuples (every
    column is a plain number or text, so Django's per-row converters have nothing to do).
    """
    postgres = connection.vendor == "postgresql"
    last = EpochSeconds(Max("finished")) if postgres else Max("finished")
    queryset = (
        Measurement.objects.filter(condition, protocol__in=protocols)
        .order_by()
        .values_list("protocol", "src_id", "dst_id", "streams")
        .annotate(
            value=Avg("throughput_gbps"),
            succeeded=Sum("succeeded"),
            failed=Sum("failed"),
            measurements=Count("*"),
            last=last,
        )
    )
    if not postgres:  # the demo's SQLite: timestamps come back as datetimes
        return [(*row[:8], _epoch(row[8])) for row in queryset]
    return plain_rows(queryset)


def _failure_reasons(
    condition: Q, protocols: list[str]
) -> dict[tuple[str, int, int, int], tuple[str, str]]:
    """(protocol, src_id, dst_id, streams) -> (error_class, message) of the first failed
    transfer of the latest all-failed measurement of each band.

    All-failed measurements are few (a partial index holds them); their first failed
    transfer is a subquery on each, so only the chosen ones read their transfers.
    """
    first_failure = Transfer.objects.filter(
        measurement=OuterRef("pk"), outcome=Outcome.FAILURE
    ).order_by("index")
    band = ("protocol", "src_id", "dst_id", "streams")
    rows = (
        Measurement.objects.filter(condition, protocol__in=protocols, succeeded=0, failed__gt=0)
        .order_by(*band, "-started")
        .annotate(
            error_class=Subquery(first_failure.values("error_class")[:1]),
            message=Subquery(first_failure.values("message")[:1]),
        )
        .values_list(*band, "error_class", "message")
    )
    if connection.features.can_distinct_on_fields:  # PostgreSQL: one row per band
        rows = rows.distinct(*band)
    reasons: dict[tuple[str, int, int, int], tuple[str, str]] = {}
    for p, s, d, k, error_class, message in rows:
        reasons.setdefault((p, s, d, k), (error_class or "unknown", message))  # first = latest
    return reasons


@dataclass(frozen=True)
class GridBands:
    """One grid in plain tuples: what both the MaDDash JSON and the grid page are built from.

    cells[r][c] is None on the diagonal, else one Band per stream setting (order of streams).
    """

    name: str
    window: str
    names: list[str]
    streams: list[int]
    check_names: list[str]
    ok_gbps: float
    warning_gbps: float
    link_gbps: float | None  # ok/warning are fractions of this capacity, when they are
    per_link_limits: bool  # the default limits are fractions of each pair's own link
    last_update: int | None  # epoch of the newest measurement in the window
    cells: list[list[tuple[Band, ...] | None]]
    stats: list[int]  # bands per status (MaDDash's report)
    failing: list[tuple[str, str]]  # (direction, node) all of whose bands are CRITICAL
    # The grid page's window 'latest': the campaign it shows (None: no campaign, or not asked).
    campaign: CampaignStart | None = None


def _build_bands(protocols: list[str], window: str) -> list[GridBands]:
    """The grids of `protocols` over `window`, with a fixed number of queries for all."""
    if connection.vendor == "postgresql":
        return _build_bands_in_one_query(protocols, window, probe=False)
    return _build_bands_by_parts(protocols, window)


def _build_bands_by_parts(protocols: list[str], window: str) -> list[GridBands]:
    """_build_bands() through the ORM, a query per part (any database)."""
    parsed = parse_window(window)
    condition = window_condition(parsed)
    rows = _cell_aggregates(condition, protocols) if protocols else []
    reasons = (
        _failure_reasons(condition, protocols) if any(r[5] == 0 and r[6] > 0 for r in rows) else {}
    )
    node_rows = list(Node.objects.order_by("name").values_list("id", "name", "link_gbps"))
    nodes = [(node_id, name) for node_id, name, _ in node_rows]
    resolvers = _limits_resolvers(protocols, {node_id: link for node_id, _, link in node_rows})
    by_protocol: dict[str, list[tuple]] = {p: [] for p in protocols}
    for row in rows:
        by_protocol[row[0]].append(row)
    return [
        _grid(protocol, parsed.label, by_protocol[protocol], reasons, nodes, *resolvers[protocol])
        for protocol in protocols
    ]


# PostgreSQL: everything a set of grids needs in one statement (one round trip, and no ORM
# compilation): the latest campaign, the cell aggregates, the nodes (ranked as ORDER BY name
# sorts them), the thresholds, the failure reason of each band's latest all-failed measurement
# and, for the grid page, which protocols have any measurement. Rows are tagged by their first
# column; the others are shared (unused ones NULL), a cell's row[1:10] being what
# _cell_aggregates() gives:
# kind, text, int a, int b, int c, float x, ok, bad, n, last epoch, float y, error class, message
_CELL, _NODE, _THRESHOLD, _FAILURE, _PROTOCOL, _CAMPAIGN = 0, 1, 2, 3, 4, 5
_FIRST_FAILURE_SQL = (
    "(SELECT t.{column} FROM results_transfer t "
    "WHERE t.measurement_id = f.id AND t.outcome = %s ORDER BY t.index LIMIT 1)"
)
_BANDS_SQL = (
    "{latest}"
    "cells AS ("
    "SELECT protocol, src_id, dst_id, streams, avg(throughput_gbps) AS value, "
    "sum(succeeded) AS ok, sum(failed) AS bad, count(*) AS n, "
    "FLOOR(EXTRACT(EPOCH FROM max(finished)))::bigint AS last "
    "FROM results_measurement WHERE {window} AND protocol = ANY(%s) GROUP BY 1, 2, 3, 4"
    "), failing AS ("  # the latest all-failed measurement of each band (a partial index)
    "SELECT DISTINCT ON (protocol, src_id, dst_id, streams) "
    "protocol, src_id, dst_id, streams, id "
    "FROM results_measurement WHERE {window} AND protocol = ANY(%s) "
    "AND succeeded = 0 AND failed > 0 "
    "ORDER BY protocol, src_id, dst_id, streams, started DESC"
    ") "
    "SELECT 0, protocol, src_id, dst_id, streams, value, ok, bad, n, last, NULL::float8, "
    "NULL::text, NULL::text FROM cells "
    "UNION ALL SELECT 1, name, id, row_number() OVER (ORDER BY name), "
    "NULL, link_gbps, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM results_node "
    "UNION ALL SELECT 2, protocol, src_id, dst_id, NULL, ok_gbps, NULL, NULL, NULL, NULL, "
    "warning_gbps, NULL, NULL FROM results_threshold WHERE protocol = ANY(%s) "
    "UNION ALL SELECT 3, f.protocol, f.src_id, f.dst_id, f.streams, "
    "NULL, NULL, NULL, NULL, NULL, NULL, "
    + _FIRST_FAILURE_SQL.format(column="error_class")
    + ", "
    + _FIRST_FAILURE_SQL.format(column="message")
    + " FROM failing f{failing_join}{probe}{campaign}"
)
# A time window holds many all-failed measurements in bands that also succeeded: only the
# bands that show a reason (no transfer succeeded) look theirs up. A campaign measures each
# band once, so there this join would cost more than the few lookups it saves.
_ONLY_ALL_FAILED_BANDS_SQL = (
    " JOIN cells c USING (protocol, src_id, dst_id, streams) WHERE c.ok = 0 AND c.bad > 0"
)
_CAMPAIGN_SQL = (  # the latest campaign's start, epoch seconds (the float keeps microseconds)
    " UNION ALL SELECT 5, NULL, NULL, NULL, NULL, EXTRACT(EPOCH FROM started)::float8, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM results_campaign WHERE id = (SELECT id FROM latest)"
)
_PROBE_SQL = (
    " UNION ALL SELECT 4, p, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM unnest(%s::varchar[]) AS p "
    "WHERE EXISTS (SELECT 1 FROM results_measurement WHERE protocol = p)"
)


def _build_bands_in_one_query(protocols: list[str], window: str, *, probe: bool) -> list[GridBands]:
    """_build_bands() on PostgreSQL in one query; with `probe`, only the grids of `protocols`
    that have any measurement (maddash_grid_names(), in the same query)."""
    parsed = parse_window(window)
    params: list = []
    if parsed.is_latest:
        sql = _BANDS_SQL.format(
            latest=f"WITH latest AS ({LATEST_CAMPAIGN_SQL}), ",
            window="campaign_id = (SELECT id FROM latest)",
            failing_join="",
            probe=_PROBE_SQL if probe else "",
            campaign=_CAMPAIGN_SQL if probe else "",
        )
        params.append(CampaignState.FINISHED)
        window_params: list = []
    else:
        sql = _BANDS_SQL.format(
            latest="WITH ",
            window="started >= %s",
            failing_join=_ONLY_ALL_FAILED_BANDS_SQL,
            probe=_PROBE_SQL if probe else "",
            campaign="",
        )
        window_params = [timezone.now() - parsed.duration]
    params += [*window_params, protocols, *window_params, protocols, protocols]
    params += [Outcome.FAILURE, Outcome.FAILURE]
    if probe:
        params.append(protocols)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    by_protocol: dict[str, list[tuple]] = {p: [] for p in protocols}
    reasons: dict[tuple[str, int, int, int], tuple[str, str]] = {}
    ranked_nodes: list[tuple[int, int, str]] = []
    links: dict[int, float | None] = {}
    thresholds: list[tuple] = []
    present: set[str] = set()
    campaign = None
    for row in found:
        kind = row[0]
        if kind == _CELL:
            by_protocol[row[1]].append(row[1:10])
        elif kind == _NODE:
            ranked_nodes.append((row[3], row[2], row[1]))
            links[row[2]] = row[5]
        elif kind == _THRESHOLD:
            thresholds.append((row[1], row[2], row[3], row[5], row[10]))
        elif kind == _FAILURE:  # as _failure_reasons() gives it (for the bands that use it)
            reasons[row[1], row[2], row[3], row[4]] = (row[11] or "unknown", row[12])
        elif kind == _PROTOCOL:
            present.add(row[1])
        else:
            started = None if row[5] is None else datetime.fromtimestamp(row[5], tz=UTC)
            campaign = CampaignStart(started=started)
    ranked_nodes.sort()
    nodes = [(node_id, name) for _, node_id, name in ranked_nodes]
    resolvers = _resolvers_from(protocols, thresholds, links)
    shown = [p for p in protocols if p in present] if probe else protocols
    return [
        _grid(
            protocol,
            parsed.label,
            by_protocol[protocol],
            reasons,
            nodes,
            *resolvers[protocol],
            campaign=campaign,
        )
        for protocol in shown
    ]


def _grid(
    name: str,
    window: str,
    rows: list[tuple],
    reasons: dict,
    nodes: list[tuple[int, str]],
    grid_limits: Limits,
    limits_for: Callable,
    per_link: bool = False,
    *,
    campaign: CampaignStart | None = None,
) -> GridBands:
    # (src, dst, streams) -> the aggregate row
    found = {(row[1], row[2], row[3]): row for row in rows}
    streams = sorted({row[3] for row in rows} or DEFAULT_STREAM_SETTINGS, reverse=True)
    stats = [0] * 6
    # CRITICAL bands per node as source / as destination (all of them: a problem to report).
    critical_out = [0] * len(nodes)
    critical_in = [0] * len(nodes)
    cells: list[list[tuple[Band, ...] | None]] = []
    for r, (src_id, _) in enumerate(nodes):
        row_cells: list[tuple[Band, ...] | None] = []
        for c, (dst_id, _) in enumerate(nodes):
            if src_id == dst_id:
                row_cells.append(None)
                continue
            limits = limits_for(src_id, dst_id)
            bands = []
            for k in streams:
                aggregate = found.get((src_id, dst_id, k))
                if aggregate is None:
                    band = NOT_RUN_BAND
                else:
                    _, _, _, _, value, ok, bad, n, last = aggregate
                    reason = reasons.get((name, src_id, dst_id, k)) if bad else None
                    status, message = _status_message(ok, bad, value, n, limits, reason)
                    band = (status, message, last, value, ok, bad, n)
                    if status == CRITICAL:
                        critical_out[r] += 1
                        critical_in[c] += 1
                stats[band[0]] += 1
                bands.append(band)
            row_cells.append(tuple(bands))
        cells.append(row_cells)

    names = [n for _, n in nodes]
    per_node = (len(nodes) - 1) * len(streams)  # bands of each node, each way
    failing = [
        (direction, node)
        for i, node in enumerate(names)
        for direction, critical in (("Outgoing", critical_out[i]), ("Incoming", critical_in[i]))
        if per_node and critical == per_node
    ]
    return GridBands(
        name=name,
        window=window,
        names=names,
        streams=streams,
        check_names=[check_name(k) for k in streams],
        ok_gbps=grid_limits.ok_gbps,
        warning_gbps=grid_limits.warning_gbps,
        link_gbps=grid_limits.link_gbps,
        per_link_limits=per_link,
        last_update=max(map(itemgetter(8), rows), default=None),
        cells=cells,
        stats=stats,
        failing=failing,
        campaign=campaign,
    )


@cached_aggregate("maddash-bands")
def grid_bands(*, name: str, window: str = "latest") -> GridBands:
    """The bands of grid `name` over `window`; raises UnknownGrid or ValueError (window)."""
    if name not in Protocol.values:
        raise UnknownGrid(
            f"no grid named {name!r}; grids are named by protocol: " + ", ".join(Protocol.values)
        )
    return _build_bands([name], window)[0]


def all_grid_bands(*, window: str = "latest") -> list[GridBands]:
    """Every grid with results (maddash_grid_names) over `window`, in one aggregate query:
    the grid page's data (the page caches what it builds from them). Over 'latest', each
    also holds the start of the latest campaign (`campaign`), which the page shows."""
    if connection.vendor == "postgresql":  # the grid names and the campaign in the same query
        return _build_bands_in_one_query(list(Protocol.values), window, probe=True)
    return _with_campaign(_build_bands(maddash_grid_names(), window), window)


def _with_campaign(grids: list[GridBands], window: str) -> list[GridBands]:
    """all_grid_bands() by parts: the latest campaign's start added (window 'latest')."""
    found = latest_campaign() if parse_window(window).is_latest else None
    if found is None:
        return grids
    return [replace(grid, campaign=CampaignStart(started=found.started)) for grid in grids]


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


def status_labels(bands: GridBands) -> list[str]:
    if bands.per_link_limits:  # the limits differ per pair: say what they are fractions of
        ok = f"{settings.TPCBENCH_OK_LINK_FRACTION:.0%} of the pair's link"
        warning = f"{settings.TPCBENCH_WARNING_LINK_FRACTION:.0%} of the pair's link"
    else:
        ok, warning = f"{bands.ok_gbps:g} Gbps", f"{bands.warning_gbps:g} Gbps"
    of_link = f" ({bands.link_gbps:g} Gbit/s links)" if bands.link_gbps else ""
    return [
        f"Throughput >= {ok}{of_link}",
        f"Throughput >= {warning} and < {ok}, or some transfers failed",
        f"Throughput < {warning}, or every transfer failed",
        "Unable to retrieve data",
        "Check has not yet run",
    ]


class _Uris:
    """The URIs of one grid's resources, names quoted once; per column, the tails of its
    checks' URIs and history links (a cell's are its row's head and these)."""

    def __init__(self, bands: GridBands) -> None:
        self.grid = "/maddash/grids/" + quote(bands.name, safe="")
        self.quoted = [quote(n, safe="") for n in bands.names]
        self.checks = [
            (k, label, quote(label, safe=""))
            for k, label in zip(bands.streams, bands.check_names, strict=True)
        ]
        # Per column: per check, (uri tail, history tail, streams, check name).
        self.column_checks = [
            [
                (
                    f"/{quoted}/{quoted_label}",
                    f"{name}/?protocol={bands.name}&streams={k}",
                    k,
                    label,
                )
                for k, label, quoted_label in self.checks
            ]
            for quoted, name in zip(self.quoted, bands.names, strict=True)
        ]

    def row(self, r: int) -> str:
        return f"{self.grid}/{self.quoted[r]}"

    def cell(self, r: int, c: int) -> str:
        return f"{self.grid}/{self.quoted[r]}/{self.quoted[c]}"


def _check_rows(
    bands: GridBands, uris: _Uris, rows: Iterable[int]
) -> list[list[list[dict] | None]]:
    """Per row of `rows`: the checks of each of its cells in MaDDash's shape plus our keys
    (None on the diagonal). The grid's hot loop: one dict per band, URIs from precomputed
    heads and tails."""
    found = []
    for r in rows:
        row_uri = uris.row(r)
        row_history = f"/pairs/{bands.names[r]}/"
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


def maddash_grid(*, name: str, window: str = "latest") -> dict:
    """The grid of protocol `name` over `window`; raises UnknownGrid or ValueError (window).

    Built from the cached bands on every call: the cache holds the compact form only.
    """
    bands = grid_bands(name=name, window=window)
    names = bands.names
    uris = _Uris(bands)
    return {
        "name": name,
        "window": bands.window,
        "statusLabels": status_labels(bands),
        "lastUpdateTime": bands.last_update or _epoch(timezone.now()),
        "columnNames": list(names),
        "columnProps": [{"label": n} for n in names],
        "checkNames": list(bands.check_names),
        "grid": _check_rows(bands, uris, range(len(names))),
        "rows": [
            {"name": n, "uri": uris.row(r), "props": {"label": n}} for r, n in enumerate(names)
        ],
        "report": _report(bands),
    }


def _row_index(bands: GridBands, row: str) -> int:
    try:
        return bands.names.index(row)
    except ValueError:
        raise UnknownGrid(f"no row {row!r} in grid {bands.name!r}") from None


def maddash_row(*, grid: str, row: str, window: str = "latest") -> dict:
    """One row of a grid, like MaDDash's row resource: `cells[]`, one per destination, each
    with its URI and its checks. Raises UnknownGrid (grid or row) or ValueError (window)."""
    bands = grid_bands(name=grid, window=window)
    uris = _Uris(bands)
    r = _row_index(bands, row)
    checks = _check_rows(bands, uris, [r])[0]
    return {
        "name": row,
        "gridName": grid,
        "window": bands.window,
        "uri": uris.row(r),
        "props": {"label": row},
        "checkNames": list(bands.check_names),
        "cells": [
            {"name": col, "uri": uris.cell(r, c), "checks": checks[c]}
            for c, col in enumerate(bands.names)
            if c != r
        ],
    }


def maddash_cell(*, grid: str, row: str, col: str, window: str = "latest") -> dict:
    """One cell, like MaDDash's cell resource: its `checks[]` (each with its URI)."""
    bands = grid_bands(name=grid, window=window)
    uris = _Uris(bands)
    r, c = _row_index(bands, row), _row_index(bands, col)
    if r == c:
        raise UnknownGrid(f"no cell {row!r} -> {col!r} in grid {grid!r}")
    return {
        "gridName": grid,
        "rowName": row,
        "colName": col,
        "window": bands.window,
        "uri": uris.cell(r, c),
        "checks": _checks(bands, uris, r, c),
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
    found = Node.objects.filter(name__in=[row, col]).values_list("name", "id", "link_gbps")
    nodes = {name: node_id for name, node_id, _ in found}
    links = {node_id: link for _, node_id, link in found}
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
    _, limits_for, _ = _limits_resolver(grid, links)
    limits = limits_for(nodes[row], nodes[col])

    def result(m: dict | None) -> dict:
        if m is None:
            return _check_dict(NOT_RUN_BAND)
        ok, bad, value = m["succeeded"], m["failed"], m["throughput_gbps"]
        status, message = _status_message(ok, bad, value, 1, limits, reasons.get(m["id"]))
        return _check_dict((status, message, _epoch(m["finished"]), value, ok, bad, 1))

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

"""The grids' reads (selectors): one grid per protocol, over a window (the latest finished
campaign, or the last N hours or days), cached per data version, and one check's history.
Built through the ORM, a few plain queries whatever the number of nodes, on PostgreSQL and
on the demo's SQLite alike."""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Avg, Count, Max, Q, QuerySet, Subquery, Sum

from webapp.results.cache import cached_aggregate
from webapp.results.choices import Auth, Checksum, Client, Outcome, Protocol, Scope
from webapp.results.compiled_sql import compiled_query
from webapp.results.grid.bands import GridBands, assemble_grid
from webapp.results.grid.limits import Limits, Resolver, resolvers_from
from webapp.results.models import Measurement, Node, Threshold, Transfer
from webapp.results.selectors.campaigns import CampaignStart, latest_campaign_start
from webapp.results.selectors.measurements import window_lookups
from webapp.results.vendor_sql import EpochSeconds
from webapp.results.windows import Window, parse_window

_CHECK = re.compile(r"^([1-9][0-9]{0,3}) streams?$")


class UnknownGrid(LookupError):
    """No grid of that name (grid names are protocol names)."""


def parse_check_name(check: str) -> int | None:
    """'8 streams' (or '8+streams', as MaDDash URIs spell spaces) -> 8; None if not a check."""
    match = _CHECK.match(check.replace("+", " ").strip())
    return int(match.group(1)) if match else None


Dimensions = tuple[str, str, str, str]  # (protocol, auth, client, checksum)


def grid_dimensions() -> set[Dimensions]:
    """The (protocol, auth, client, checksum) combinations that have at least one measurement.

    One query: the rows whose id is the first of each combination's (a LIMIT 1 lookup each
    in the index keyed on them).
    """
    return set(_first_of_each_combination())


def grid_names(
    *, auth: str = Auth.X509, client: str = Client.NATIVE, checksum: str = Checksum.NONE
) -> list[str]:
    """Protocols that have at least one measurement with this authorization, client and
    checksum, in the order of Protocol (https first)."""
    chosen = (auth, client, checksum)
    found = {protocol for protocol, *dimensions in grid_dimensions() if tuple(dimensions) == chosen}
    return [p for p in Protocol.values if p in found]


@compiled_query
def _first_of_each_combination() -> QuerySet:
    firsts = Q()
    for protocol in Protocol.values:
        for auth in Auth.values:
            for client in Client.values:
                for checksum in Checksum.values:
                    first = Measurement.objects.filter(
                        protocol=protocol, auth=auth, client=client, checksum=checksum
                    )
                    firsts |= Q(pk=Subquery(first.order_by().values("pk")[:1]))
    return (
        Measurement.objects.filter(firsts)
        .order_by()
        .values_list("protocol", "auth", "client", "checksum")
    )


@compiled_query
def _nodes() -> QuerySet:
    return Node.objects.order_by("name").values_list("id", "name", "link_gbps")


def _nodes_of(sites: tuple[str, ...]) -> QuerySet:
    """The nodes of `sites` (Node.site, as host measurements name it): a site cell's hosts."""
    found = Node.objects.filter(site__in=sites).order_by("name")
    return found.values_list("id", "name", "link_gbps")


@compiled_query
def _thresholds() -> QuerySet:
    """Every Threshold row (an admin makes a few): one query compiled once."""
    return Threshold.objects.order_by().values_list(
        "protocol", "src_id", "dst_id", "ok_gbps", "warning_gbps"
    )


def limits_resolvers(protocols: list[str], links: dict[int, float | None]) -> dict[str, Resolver]:
    """Per protocol: its grid-wide Limits and (src_id, dst_id) -> Limits (limits.resolvers_from
    over the Threshold rows of `protocols`). One query for all the protocols.

    `links`: node id -> link capacity in Gbit/s (None: unknown)."""
    rows = [row for row in _thresholds() if row[0] in protocols]
    return resolvers_from(protocols, rows, links)


BandKey = tuple[str, int, int, int]  # (protocol, src_id, dst_id, streams)
_BAND = ("protocol", "src_id", "dst_id", "streams")
# A window's measurement filter as (lookup, value) pairs: hashable, so a query built from
# it is compiled once while the window means the same (the latest campaign).
Lookups = tuple[tuple[str, object], ...]


@compiled_query
def _cell_aggregates(window: Lookups, protocols: tuple[str, ...]) -> QuerySet:
    """(protocol, src_id, dst_id, streams, value, succeeded, failed, measurements, last epoch).

    One aggregate query for every grid; every column a plain number or text (the database
    computes the epoch).
    """
    return (
        Measurement.objects.filter(**dict(window), protocol__in=protocols)
        .order_by()
        .values_list(*_BAND)
        .annotate(
            value=Avg("throughput_gbps"),
            succeeded=Sum("succeeded"),
            failed=Sum("failed"),
            measurements=Count("*"),
            last=EpochSeconds(Max("finished")),
        )
    )


@compiled_query
def _all_failed(window: Lookups, protocols: tuple[str, ...]) -> QuerySet:
    """The window's measurements none of whose transfers succeeded (a partial index holds
    them: few), newest first, with their band."""
    return (
        Measurement.objects.filter(
            **dict(window), protocol__in=protocols, succeeded=0, failed__gt=0
        )
        .order_by("-started", "-id")
        .values_list(*_BAND, "id")
    )


@compiled_query
def _failed_transfers(measurements: tuple[int, ...]) -> QuerySet:
    """The failed transfers of these measurements, first transfer first."""
    return (
        Transfer.objects.filter(measurement_id__in=measurements, outcome=Outcome.FAILURE)
        .order_by("measurement_id", "index")
        .values_list("measurement_id", "error_class", "message")
    )


def _failure_reasons(window: Lookups, bands: set[BandKey]) -> dict[BandKey, tuple[str, str]]:
    """Band -> (error_class, message) of the first failed transfer of its latest measurement,
    for `bands`, whose every measurement in the window failed whole.

    Two small queries: the window's all-failed measurements, the latest of each band kept;
    then those ones' failed transfers. (One query joining the two costs PostgreSQL more to
    plan than both to run.)
    """
    latest: dict[int, BandKey] = {}
    seen: set[BandKey] = set()
    for *band_values, measurement_id in _all_failed(window, tuple(sorted({b[0] for b in bands}))):
        band = tuple(band_values)
        if band in bands and band not in seen:  # newest first: the first seen is the latest
            seen.add(band)
            latest[measurement_id] = band
    reasons: dict[BandKey, tuple[str, str]] = {}
    for measurement_id, error_class, message in _failed_transfers(tuple(latest)):
        reasons.setdefault(latest[measurement_id], (error_class or "unknown", message))
    return reasons


def _window(window: Window, *, with_campaign: bool) -> tuple[Lookups, CampaignStart | None]:
    """The measurement filter of `window` and, over 'latest' `with_campaign`, the latest
    campaign's start (read with its id: one query for both)."""
    if not (window.is_latest and with_campaign):
        return tuple(window_lookups(window).items()), None
    found = latest_campaign_start()
    if found is None:
        return (("pk__in", ()),), None
    campaign_id, started = found
    return (("campaign_id", campaign_id),), CampaignStart(started=started)


def build_bands(
    protocols: list[str],
    window: str,
    *,
    with_campaign: bool = False,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
    sites: tuple[str, ...] = (),
) -> list[GridBands]:
    """The grids of `protocols` over `window` of the host measurements with this
    authorization, client and checksum, with a fixed number of queries for all; with
    `sites`, only the nodes of those sites (a site cell's drill-down)."""
    parsed = parse_window(window)
    lookups, campaign = _window(parsed, with_campaign=with_campaign)
    # the dimensions are lookups like the window's: one hashable key
    filters = (
        *lookups, ("auth", auth), ("client", client), ("checksum", checksum),
        ("scope", Scope.HOST),
    )  # fmt: skip
    rows = _cell_aggregates(filters, tuple(protocols)) if protocols else []
    all_failed = {row[:4] for row in rows if row[5] == 0 and row[6] > 0}
    reasons = _failure_reasons(filters, all_failed) if all_failed else {}
    node_rows = _nodes_of(sites) if sites else _nodes()
    nodes = [(node_id, name) for node_id, name, _ in node_rows]
    resolvers = limits_resolvers(protocols, {node_id: link for node_id, _, link in node_rows})
    by_protocol: dict[str, list[tuple]] = {p: [] for p in protocols}
    for row in rows:
        by_protocol[row[0]].append(row)
    return [
        assemble_grid(
            protocol,
            parsed.label,
            by_protocol[protocol],
            reasons,
            nodes,
            *resolvers[protocol],
            campaign=campaign,
            auth=auth,
            client=client,
            checksum=checksum,
        )
        for protocol in protocols
    ]


def check_grid_name(name: str) -> None:
    """Raises UnknownGrid unless `name` is a grid's (a protocol)."""
    if name not in Protocol.values:
        raise UnknownGrid(
            f"no grid named {name!r}; grids are named by protocol: " + ", ".join(Protocol.values)
        )


@cached_aggregate("maddash-bands")
def grid_bands(
    *,
    name: str,
    window: str = "latest",
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> GridBands:
    """The bands of grid `name` over `window`; raises UnknownGrid or ValueError (window).
    (A site grid's: results.grid.sites.site_grid_bands.)"""
    check_grid_name(name)
    return build_bands([name], window, auth=auth, client=client, checksum=checksum)[0]


def all_grid_bands(
    *,
    window: str = "latest",
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> list[GridBands]:
    """Every grid with results of these dimensions (grid_names) over `window`:
    the grid page's data (the page caches what it builds from them). Over 'latest', each also
    holds the start of the latest campaign (`campaign`), which the page shows."""
    dimensions = {"auth": auth, "client": client, "checksum": checksum}
    names = grid_names(**dimensions)
    return build_bands(names, window, with_campaign=True, **dimensions)


# A check's measurements as its history shows them.
CHECK_FIELDS = (
    "id",
    "finished",
    "throughput_gbps",
    "makespan_gbps",
    "rtt_ms",
    "succeeded",
    "failed",
)


@dataclass(frozen=True)
class CheckHistory:
    """One check of one cell: a page of its measurements, newest first, and what colours them."""

    grid: str
    row: str
    col: str
    streams: int
    auth: str
    client: str
    checksum: str
    total: int  # measurements of the check, every page
    per_page: int
    page: list[dict]  # CHECK_FIELDS of the page's measurements
    latest: dict | None  # the newest measurement (the check's current state), if any
    reasons: dict[int, tuple[str, str]]  # measurement id -> its first failure, if all failed
    limits: Limits


def _first_failures(measurements: Iterable[dict | None]) -> dict[int, tuple[str, str]]:
    """Measurement id -> (error_class, message) of its first failed transfer, for those of
    `measurements` none of whose transfers succeeded."""
    failing = tuple(m["id"] for m in measurements if m and m["succeeded"] == 0 and m["failed"])
    reasons: dict[int, tuple[str, str]] = {}
    for measurement_id, error_class, message in _failed_transfers(failing):
        reasons.setdefault(measurement_id, (error_class or "unknown", message))
    return reasons


def check_history(
    *,
    grid: str,
    row: str,
    col: str,
    check: str,
    page: int = 0,
    per_page: int = 10,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> CheckHistory:
    """Check `check` ('8 streams') of cell `row` -> `col` of grid `grid` with the measurements
    of page `page`. Raises UnknownGrid when the grid, a node or the check does not exist."""
    streams = parse_check_name(check)
    if grid not in Protocol.values or streams is None:
        raise UnknownGrid(f"no check {check!r} in grid {grid!r}")
    found = Node.objects.filter(name__in=[row, col]).values_list("name", "id", "link_gbps")
    nodes = {name: node_id for name, node_id, _ in found}
    links = {node_id: link for _, node_id, link in found}
    if row not in nodes or col not in nodes or row == col:
        raise UnknownGrid(f"no cell {row!r} -> {col!r} in grid {grid!r}")
    measurements = Measurement.objects.filter(
        protocol=grid,
        auth=auth,
        client=client,
        checksum=checksum,
        scope=Scope.HOST,  # as the host grid's cells
        src_id=nodes[row],
        dst_id=nodes[col],
        streams=streams,
    ).order_by("-started", "-id")
    total = measurements.count()
    chosen = list(measurements.values(*CHECK_FIELDS)[page * per_page : (page + 1) * per_page])
    latest = chosen[0] if page == 0 and chosen else measurements.values(*CHECK_FIELDS).first()
    _, limits_for, _ = limits_resolvers([grid], links)[grid]
    return CheckHistory(
        grid=grid,
        row=row,
        col=col,
        streams=streams,
        auth=auth,
        client=client,
        checksum=checksum,
        total=total,
        per_page=per_page,
        page=chosen,
        latest=latest,
        reasons=_first_failures([*chosen, latest]),
        limits=limits_for(nodes[row], nodes[col]),
    )

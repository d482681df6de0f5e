"""The grids: one per protocol, over a window (the latest finished campaign, or the last N
hours or days), cached per data version. Built through the ORM on any database, or on
PostgreSQL in one hand-written statement (results.queries)."""

import re
from dataclasses import replace

from django.db import connection
from django.db.models import Avg, Count, Func, IntegerField, Max, OuterRef, Q, Subquery, Sum

from results import queries
from results.cache import cached_aggregate
from results.choices import Outcome, Protocol
from results.grid_bands import GridBands, assemble_grid, epoch
from results.grid_limits import limits_resolvers
from results.models import Measurement, Node, Transfer
from results.selectors import CampaignStart, latest_campaign, plain_rows, window_condition
from results.windows import parse_window

_CHECK = re.compile(r"^([1-9][0-9]{0,3}) streams?$")


class UnknownGrid(LookupError):
    """No grid of that name (grid names are protocol names)."""


def parse_check_name(check: str) -> int | None:
    """'8 streams' (or '8+streams', as MaDDash URIs spell spaces) -> 8; None if not a check."""
    match = _CHECK.match(check.replace("+", " ").strip())
    return int(match.group(1)) if match else None


def grid_names() -> list[str]:
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
        return [(*row[:8], epoch(row[8])) for row in queryset]
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


def _build_bands(protocols: list[str], window: str) -> list[GridBands]:
    """The grids of `protocols` over `window`, with a fixed number of queries for all."""
    if connection.vendor == "postgresql":
        return queries.grid_bands_in_one_query(protocols, window, probe=False)
    return build_bands_by_parts(protocols, window)


def build_bands_by_parts(protocols: list[str], window: str) -> list[GridBands]:
    """The grids of `protocols` over `window` through the ORM, a query per part (any database)."""
    parsed = parse_window(window)
    condition = window_condition(parsed)
    rows = _cell_aggregates(condition, protocols) if protocols else []
    reasons = (
        _failure_reasons(condition, protocols) if any(r[5] == 0 and r[6] > 0 for r in rows) else {}
    )
    node_rows = list(Node.objects.order_by("name").values_list("id", "name", "link_gbps"))
    nodes = [(node_id, name) for node_id, name, _ in node_rows]
    resolvers = limits_resolvers(protocols, {node_id: link for node_id, _, link in node_rows})
    by_protocol: dict[str, list[tuple]] = {p: [] for p in protocols}
    for row in rows:
        by_protocol[row[0]].append(row)
    return [
        assemble_grid(
            protocol, parsed.label, by_protocol[protocol], reasons, nodes, *resolvers[protocol]
        )
        for protocol in protocols
    ]


@cached_aggregate("maddash-bands")
def grid_bands(*, name: str, window: str = "latest") -> GridBands:
    """The bands of grid `name` over `window`; raises UnknownGrid or ValueError (window)."""
    if name not in Protocol.values:
        raise UnknownGrid(
            f"no grid named {name!r}; grids are named by protocol: " + ", ".join(Protocol.values)
        )
    return _build_bands([name], window)[0]


def all_grid_bands(*, window: str = "latest") -> list[GridBands]:
    """Every grid with results (grid_names) over `window`, in one aggregate query:
    the grid page's data (the page caches what it builds from them). Over 'latest', each
    also holds the start of the latest campaign (`campaign`), which the page shows."""
    if connection.vendor == "postgresql":  # the grid names and the campaign in the same query
        return queries.grid_bands_in_one_query(list(Protocol.values), window, probe=True)
    return with_campaign(_build_bands(grid_names(), window), window)


def with_campaign(grids: list[GridBands], window: str) -> list[GridBands]:
    """all_grid_bands() by parts: the latest campaign's start added (window 'latest')."""
    found = latest_campaign() if parse_window(window).is_latest else None
    if found is None:
        return grids
    return [replace(grid, campaign=CampaignStart(started=found.started)) for grid in grids]

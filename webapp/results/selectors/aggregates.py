"""The aggregates the API and the pages both show: throughput versus latency and single
versus multi stream, over a window (plain dicts, ready for JSON and templates), cached per
data version. A fixed number of queries whatever the number of nodes or pairs.
"""

import statistics
from operator import itemgetter

from django.db.models import Avg, Count, QuerySet

from webapp.results.cache import cached_aggregate
from webapp.results.choices import Auth, Checksum, Client
from webapp.results.compiled_sql import compiled_query
from webapp.results.models import Measurement
from webapp.results.selectors.measurements import (
    dimension_lookups,
    node_names_by_id,
    window_lookups,
)
from webapp.results.windows import Window, parse_window


def _fit(points: list[dict]) -> dict:
    """Least squares throughput = slope * rtt + intercept, and Pearson's r, over the points."""
    xs = [p["rtt_ms"] for p in points]
    ys = [p["throughput_gbps"] for p in points]
    fit = {"slope_gbps_per_ms": None, "intercept_gbps": None, "r": None, "n": len(points)}
    if len(points) < 2 or len(set(xs)) < 2:
        return fit
    slope, intercept = statistics.linear_regression(xs, ys)
    fit["slope_gbps_per_ms"], fit["intercept_gbps"] = slope, intercept
    if len(set(ys)) >= 2:
        fit["r"] = statistics.correlation(xs, ys)
    return fit


@compiled_query
def _latency_aggregates(
    window: tuple[tuple[str, object], ...], protocol: str | None, streams: int | None
) -> QuerySet:
    """Per pair and protocol: mean RTT, mean throughput, measurements with a throughput."""
    queryset = Measurement.objects.filter(**dict(window), throughput_gbps__isnull=False)
    if protocol:
        queryset = queryset.filter(protocol=protocol)
    if streams:
        queryset = queryset.filter(streams=streams)
    return (
        queryset.order_by()
        .values_list("src_id", "dst_id", "protocol")
        .annotate(rtt=Avg("rtt_ms"), throughput=Avg("throughput_gbps"), n=Count("*"))
    )


def _lookups(
    window: Window, dimensions: dict[str, str] | None, campaigns: tuple[str, ...]
) -> tuple[tuple[str, object], ...]:
    """A window's, the dimensions' and, when given, the campaigns' (uuids) lookups."""
    lookups = tuple(window_lookups(window).items()) + dimension_lookups(dimensions)
    return (*lookups, ("campaign__uuid__in", campaigns)) if campaigns else lookups


def _latency_rows(
    window: Window,
    protocol: str | None,
    streams: int | None,
    dimensions: dict[str, str] | None = None,
    campaigns: tuple[str, ...] = (),
) -> list[tuple[str, str, str, float | None, float, int]]:
    """(src, dst, protocol, mean RTT, mean throughput, n) per pair and protocol with a throughput:
    an aggregate over node ids, then their names (grouping by joined names costs more)."""
    lookups = _lookups(window, dimensions, campaigns)
    rows = _latency_aggregates(lookups, protocol, streams)
    names = node_names_by_id()
    return [(names[src_id], names[dst_id], *rest) for src_id, dst_id, *rest in rows]


@cached_aggregate("throughput-vs-latency")
def throughput_vs_latency(
    *,
    protocol: str | None,
    streams: int | None,
    window: str,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
    campaigns: tuple[str, ...] = (),
) -> dict:
    """Per (pair, protocol): mean RTT and mean throughput over the window, and a fit per protocol.

    A pair counts when it has both a throughput and an RTT; `measurements` is how many
    measurements with a throughput went into its mean. `campaigns` (uuids): only theirs.
    """
    parsed = parse_window(window)
    dimensions = {"auth": auth, "client": client, "checksum": checksum}
    rows = _latency_rows(parsed, protocol, streams, dimensions, campaigns)
    rows.sort(key=itemgetter(2, 0, 1))  # by protocol, src, dst: tuples sort faster than dicts
    points = [
        {
            "src": src,
            "dst": dst,
            "protocol": protocol_name,
            "rtt_ms": rtt,
            "throughput_gbps": throughput,
            "measurements": n,
        }
        for src, dst, protocol_name, rtt, throughput, n in rows
        if rtt is not None
    ]
    by_protocol: dict[str, list[dict]] = {}
    for point in points:
        by_protocol.setdefault(point["protocol"], []).append(point)
    return {
        "protocol": protocol,
        "auth": auth,
        "client": client,
        "checksum": checksum,
        "streams": streams,
        "window": parsed.label,
        "points": points,
        "fits": {name: _fit(group) for name, group in sorted(by_protocol.items())},
    }


@compiled_query
def _stream_aggregates(window: tuple[tuple[str, object], ...], protocol: str) -> QuerySet:
    """Per pair and stream setting: mean throughput."""
    return (
        Measurement.objects.filter(**dict(window), protocol=protocol, throughput_gbps__isnull=False)
        .order_by()
        .values_list("src_id", "dst_id", "streams")
        .annotate(throughput=Avg("throughput_gbps"))
    )


def _stream_rows(
    window: Window,
    protocol: str,
    dimensions: dict[str, str] | None = None,
    campaigns: tuple[str, ...] = (),
) -> list[tuple[str, str, int, float]]:
    """(src, dst, streams, mean throughput) per pair and stream setting with a throughput."""
    lookups = _lookups(window, dimensions, campaigns)
    rows = _stream_aggregates(lookups, protocol)
    names = node_names_by_id()
    return [(names[src_id], names[dst_id], *rest) for src_id, dst_id, *rest in rows]


@cached_aggregate("stream-comparison")
def stream_comparison(
    *,
    protocol: str,
    window: str,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
    campaigns: tuple[str, ...] = (),
) -> dict:
    """Per pair: mean throughput with 1 stream vs with the highest stream setting above 1
    (`campaigns`, uuids: only theirs)."""
    parsed = parse_window(window)
    pairs: dict[tuple[str, str], dict] = {}
    dimensions = {"auth": auth, "client": client, "checksum": checksum}
    for src, dst, streams, throughput in _stream_rows(parsed, protocol, dimensions, campaigns):
        key = (src, dst)
        pair = pairs.get(key)
        if pair is None:
            pair = pairs[key] = {
                "src": key[0],
                "dst": key[1],
                "single_gbps": None,
                "multi_gbps": None,
                "multi_streams": None,
                "ratio": None,
            }
        if streams == 1:
            pair["single_gbps"] = throughput
        elif pair["multi_streams"] is None or streams > pair["multi_streams"]:
            pair["multi_streams"], pair["multi_gbps"] = streams, throughput
    for pair in pairs.values():
        if pair["single_gbps"] and pair["multi_gbps"] is not None:
            pair["ratio"] = pair["multi_gbps"] / pair["single_gbps"]
    return {
        "protocol": protocol,
        "auth": auth,
        "client": client,
        "checksum": checksum,
        "window": parsed.label,
        "pairs": [pairs[key] for key in sorted(pairs)],
    }

"""Reads: the figures the API and the pages both show (plain dicts, ready for JSON/templates).

Every selector runs a fixed number of queries whatever the number of nodes or pairs.
"""

import statistics
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter

from django.db.models import Avg, Count, Exists, F, OuterRef, Prefetch, QuerySet
from django.utils import timezone

from webapp.results.cache import cached_aggregate
from webapp.results.choices import Auth, CampaignState, Client
from webapp.results.models import Campaign, Measurement, Node, Transfer
from webapp.results.orm_rows import compiled_query
from webapp.results.windows import Window, parse_window

__all__ = [
    "CampaignStart",
    "Window",
    "latest_campaign",
    "node_names_by_id",
    "pair_history",
    "pair_measurements",
    "pair_series",
    "parse_window",
    "stream_comparison",
    "throughput_vs_latency",
]


def _latest_campaign_candidates() -> tuple[QuerySet, QuerySet]:
    """Finished campaigns, latest first; and campaigns with results, latest first."""
    finished = Campaign.objects.filter(state=CampaignState.FINISHED).order_by(
        F("finished").desc(nulls_last=True), "-id"
    )
    with_results = Campaign.objects.filter(
        Exists(Measurement.objects.filter(campaign_id=OuterRef("pk")))
    ).order_by(F("started").desc(nulls_last=True), "-id")
    return finished, with_results


@dataclass(frozen=True)
class CampaignStart:
    """What the grid page shows of the latest campaign (kept with the grids it computes)."""

    started: datetime | None


def latest_campaign() -> Campaign | None:
    """The latest finished campaign; before any has finished, the latest one with results."""
    finished, with_results = _latest_campaign_candidates()
    return finished.first() or with_results.first()


@compiled_query
def _latest_finished() -> QuerySet:
    return _latest_campaign_candidates()[0].values_list("pk", "started")[:1]


@compiled_query
def _latest_with_results() -> QuerySet:
    return _latest_campaign_candidates()[1].values_list("pk", "started")[:1]


def latest_campaign_start() -> tuple[int, datetime | None] | None:
    """latest_campaign()'s id and start (one query while some campaign has finished)."""
    found = _latest_finished() or _latest_with_results()
    return found[0] if found else None


def latest_campaign_id() -> int | None:
    """latest_campaign()'s id."""
    found = latest_campaign_start()
    return found[0] if found else None


def window_lookups(window: Window, *, now: datetime | None = None) -> dict[str, object]:
    """The measurement filter of a window as field lookups (a query for 'latest', none
    otherwise).

    The latest campaign's id goes in as a value: a query built with it is compiled once
    per campaign (results.orm_rows), where a subquery in its place would be compiled, and
    run, with every query that uses the filter. A relative window reaches back from the
    start of the current minute, the minute its cached answer is keyed by (results.cache):
    its queries too are then compiled once a minute.
    """
    if window.is_latest:
        campaign_id = latest_campaign_id()
        return {"campaign_id": campaign_id} if campaign_id is not None else {"pk__in": ()}
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    return {"started__gte": minute - window.duration}


@compiled_query
def _node_names() -> QuerySet:
    return Node.objects.order_by().values_list("id", "name")


def node_names_by_id() -> dict[int, str]:
    return dict(_node_names())


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


def _dimension_lookups(dimensions: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The authorization and client to read (x509 and native unless asked), as lookups."""
    chosen = {"auth": Auth.X509, "client": Client.NATIVE, **(dimensions or {})}
    return tuple(sorted(chosen.items()))


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


def _latency_rows(
    window: Window,
    protocol: str | None,
    streams: int | None,
    dimensions: dict[str, str] | None = None,
) -> list[tuple[str, str, str, float | None, float, int]]:
    """(src, dst, protocol, mean RTT, mean throughput, n) per pair and protocol with a throughput:
    an aggregate over node ids, then their names (grouping by joined names costs more)."""
    lookups = tuple(window_lookups(window).items()) + _dimension_lookups(dimensions)
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
) -> dict:
    """Per (pair, protocol): mean RTT and mean throughput over the window, and a fit per protocol.

    A pair counts when it has both a throughput and an RTT; `measurements` is how many
    measurements with a throughput went into its mean.
    """
    parsed = parse_window(window)
    rows = _latency_rows(parsed, protocol, streams, {"auth": auth, "client": client})
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
    window: Window, protocol: str, dimensions: dict[str, str] | None = None
) -> list[tuple[str, str, int, float]]:
    """(src, dst, streams, mean throughput) per pair and stream setting with a throughput."""
    lookups = tuple(window_lookups(window).items()) + _dimension_lookups(dimensions)
    rows = _stream_aggregates(lookups, protocol)
    names = node_names_by_id()
    return [(names[src_id], names[dst_id], *rest) for src_id, dst_id, *rest in rows]


@cached_aggregate("stream-comparison")
def stream_comparison(
    *, protocol: str, window: str, auth: str = Auth.X509, client: str = Client.NATIVE
) -> dict:
    """Per pair: mean throughput with 1 stream vs with the highest stream setting above 1."""
    parsed = parse_window(window)
    pairs: dict[tuple[str, str], dict] = {}
    dimensions = {"auth": auth, "client": client}
    for src, dst, streams, throughput in _stream_rows(parsed, protocol, dimensions):
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
        "window": parsed.label,
        "pairs": [pairs[key] for key in sorted(pairs)],
    }


PAIR_SERIES_FIELDS = (
    "id",
    "protocol",
    "auth",
    "client",
    "streams",
    "started",
    "finished",
    "throughput_gbps",
    "makespan_gbps",
    "rtt_ms",
    "succeeded",
    "failed",
)


def pair_series(*, src: str, dst: str, since: datetime | None = None) -> list[dict]:
    """src -> dst measurements' figures, oldest first, without their transfers: for plots.

    One query of plain values, however long the window.
    """
    queryset = Measurement.objects.filter(src__name=src, dst__name=dst)
    if since is not None:
        queryset = queryset.filter(started__gte=since)
    return list(queryset.order_by("started", "id").values(*PAIR_SERIES_FIELDS))


def _transfer_dict(transfer: Transfer) -> dict:
    return {
        "index": transfer.index,
        "start": transfer.start,
        "end": transfer.end,
        "bytes": transfer.bytes,
        "outcome": transfer.outcome,
        "error_class": transfer.error_class,
        "message": transfer.message,
        "phases": transfer.phases,
        "streaming_gbps": transfer.streaming_gbps,
    }


def _measurement_dict(m: Measurement, src: str, dst: str) -> dict:
    return {
        "id": m.id,
        "uuid": str(m.uuid),
        "campaign": str(m.campaign.uuid) if m.campaign else None,
        "src": src,
        "dst": dst,
        "protocol": m.protocol,
        "auth": m.auth,
        "client": m.client,
        "streams": m.streams,
        "file_size": m.file_size,
        "started": m.started,
        "finished": m.finished,
        "throughput_gbps": m.throughput_gbps,
        "makespan_gbps": m.makespan_gbps,
        "rtt_ms": m.rtt_ms,
        "succeeded": m.succeeded,
        "failed": m.failed,
        "transfers": [_transfer_dict(t) for t in m.transfers.all()],
    }


def _with_transfers(queryset: QuerySet) -> QuerySet:
    return queryset.select_related("campaign").prefetch_related(
        Prefetch("transfers", queryset=Transfer.objects.order_by("index"))
    )


def pair_measurements(*, src: str, dst: str, ids: list[int]) -> list[dict]:
    """The src -> dst measurements of `ids` (pair_series' "id"), oldest first, with their
    transfers: two queries, whatever the number."""
    queryset = _with_transfers(Measurement.objects.filter(pk__in=ids))
    return [_measurement_dict(m, src, dst) for m in queryset.order_by("started", "id")]


def pair_history(
    *, src: str, dst: str, since: datetime | None = None, limit: int | None = None
) -> list[dict]:
    """src -> dst measurements (every protocol and stream setting), oldest first, with transfers.

    `limit` keeps only the most recent `limit` measurements (still returned oldest first).
    """
    queryset = Measurement.objects.filter(src__name=src, dst__name=dst)
    if since is not None:
        queryset = queryset.filter(started__gte=since)
    queryset = _with_transfers(queryset)
    if limit is not None:
        recent = list(queryset.order_by("-started", "-id")[:limit])
        recent.reverse()
    else:
        recent = list(queryset.order_by("started", "id"))
    return [_measurement_dict(m, src, dst) for m in recent]

"""Reads: the figures the API and the pages both show (plain dicts, ready for JSON/templates).

Every selector runs a fixed number of queries whatever the number of nodes or pairs.
"""

import statistics
from datetime import datetime

from django.db.models import Avg, Count, F, Prefetch, Q
from django.utils import timezone

from results.cache import cached_aggregate
from results.choices import CampaignState
from results.models import Campaign, Measurement, Node, Transfer
from results.windows import Window, parse_window

__all__ = [
    "Window",
    "latest_campaign",
    "measurements_in_window",
    "node_names_by_id",
    "pair_history",
    "parse_window",
    "stream_comparison",
    "throughput_vs_latency",
]


def latest_campaign() -> Campaign | None:
    """The latest finished campaign; before any has finished, the latest one with results."""
    finished = (
        Campaign.objects.filter(state=CampaignState.FINISHED)
        .order_by(F("finished").desc(nulls_last=True), "-id")
        .first()
    )
    if finished is not None:
        return finished
    return (
        Campaign.objects.filter(Q(measurements__isnull=False))
        .order_by(F("started").desc(nulls_last=True), "-id")
        .distinct()
        .first()
    )


def window_condition(window: Window, *, now: datetime | None = None) -> Q:
    """The measurement filter of a window (one query for 'latest', none otherwise)."""
    if window.is_latest:
        campaign = latest_campaign()
        return Q(campaign_id=campaign.pk) if campaign is not None else Q(pk__in=[])
    return Q(started__gte=(now or timezone.now()) - window.duration)


def measurements_in_window(*, window: str, protocol: str | None = None, streams: int | None = None):
    """Measurements of a window (a string such as '20d'), optionally of one protocol/streams."""
    queryset = Measurement.objects.filter(window_condition(parse_window(window)))
    if protocol:
        queryset = queryset.filter(protocol=protocol)
    if streams:
        queryset = queryset.filter(streams=streams)
    return queryset.order_by()


def node_names_by_id() -> dict[int, str]:
    return dict(Node.objects.order_by().values_list("id", "name"))


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


@cached_aggregate("throughput-vs-latency")
def throughput_vs_latency(*, protocol: str | None, streams: int | None, window: str) -> dict:
    """Per (pair, protocol): mean RTT and mean throughput over the window, and a fit per protocol.

    A pair counts when it has both a throughput and an RTT; `measurements` is how many
    measurements with a throughput went into its mean.
    """
    parsed = parse_window(window)
    rows = (
        measurements_in_window(window=parsed.label, protocol=protocol, streams=streams)
        .filter(throughput_gbps__isnull=False)
        .values("src_id", "dst_id", "protocol")
        .annotate(rtt=Avg("rtt_ms"), throughput=Avg("throughput_gbps"), n=Count("*"))
    )
    names = node_names_by_id()
    points = sorted(
        (
            {
                "src": names[row["src_id"]],
                "dst": names[row["dst_id"]],
                "protocol": row["protocol"],
                "rtt_ms": row["rtt"],
                "throughput_gbps": row["throughput"],
                "measurements": row["n"],
            }
            for row in rows
            if row["rtt"] is not None
        ),
        key=lambda p: (p["protocol"], p["src"], p["dst"]),
    )
    by_protocol: dict[str, list[dict]] = {}
    for point in points:
        by_protocol.setdefault(point["protocol"], []).append(point)
    return {
        "protocol": protocol,
        "streams": streams,
        "window": parsed.label,
        "points": points,
        "fits": {name: _fit(group) for name, group in sorted(by_protocol.items())},
    }


@cached_aggregate("stream-comparison")
def stream_comparison(*, protocol: str, window: str) -> dict:
    """Per pair: mean throughput with 1 stream vs with the highest stream setting above 1."""
    parsed = parse_window(window)
    rows = (
        measurements_in_window(window=parsed.label, protocol=protocol)
        .filter(throughput_gbps__isnull=False)
        .values("src_id", "dst_id", "streams")
        .annotate(throughput=Avg("throughput_gbps"))
    )
    names = node_names_by_id()
    pairs: dict[tuple[str, str], dict] = {}
    for row in rows:
        key = (names[row["src_id"]], names[row["dst_id"]])
        pair = pairs.setdefault(
            key,
            {
                "src": key[0],
                "dst": key[1],
                "single_gbps": None,
                "multi_gbps": None,
                "multi_streams": None,
                "ratio": None,
            },
        )
        if row["streams"] == 1:
            pair["single_gbps"] = row["throughput"]
        elif pair["multi_streams"] is None or row["streams"] > pair["multi_streams"]:
            pair["multi_streams"], pair["multi_gbps"] = row["streams"], row["throughput"]
    for pair in pairs.values():
        if pair["single_gbps"] and pair["multi_gbps"] is not None:
            pair["ratio"] = pair["multi_gbps"] / pair["single_gbps"]
    return {
        "protocol": protocol,
        "window": parsed.label,
        "pairs": [pairs[key] for key in sorted(pairs)],
    }


def _transfer_dict(transfer: Transfer) -> dict:
    return {
        "index": transfer.index,
        "start": transfer.start,
        "end": transfer.end,
        "bytes": transfer.bytes,
        "outcome": transfer.outcome,
        "error_class": transfer.error_class,
        "message": transfer.message,
    }


def pair_history(
    *, src: str, dst: str, since: datetime | None = None, limit: int | None = None
) -> list[dict]:
    """src -> dst measurements (every protocol and stream setting), oldest first, with transfers.

    `limit` keeps only the most recent `limit` measurements (still returned oldest first).
    """
    queryset = Measurement.objects.filter(src__name=src, dst__name=dst)
    if since is not None:
        queryset = queryset.filter(started__gte=since)
    queryset = queryset.select_related("campaign").prefetch_related(
        Prefetch("transfers", queryset=Transfer.objects.order_by("index"))
    )
    if limit is not None:
        recent = list(queryset.order_by("-started", "-id")[:limit])
        recent.reverse()
    else:
        recent = list(queryset.order_by("started", "id"))
    return [
        {
            "uuid": str(m.uuid),
            "campaign": str(m.campaign.uuid) if m.campaign else None,
            "src": src,
            "dst": dst,
            "protocol": m.protocol,
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
        for m in recent
    ]

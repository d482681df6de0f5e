"""Reads of one pair (a source and a destination): its measurements' figures over time and
the measurements themselves with their transfers (the pair page)."""

from datetime import datetime

from django.db.models import Avg, Count, F, Min, Prefetch, QuerySet

from webapp.results.models import Measurement, Transfer
from webapp.results.models.measurements import TRANSFER_FIELDS

PAIR_SERIES_FIELDS = (
    "id",
    "protocol",
    "auth",
    "client",
    "checksum",
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

    One query of plain values, however long the window. A scaling sweep's points (hosts set,
    between two sites' redirectors) are not the pair's history: the Sites page plots them.
    """
    queryset = Measurement.objects.filter(src__name=src, dst__name=dst, hosts__isnull=True)
    if since is not None:
        queryset = queryset.filter(started__gte=since)
    return list(queryset.order_by("started", "id").values(*PAIR_SERIES_FIELDS))


def _transfer_dict(transfer: Transfer) -> dict:
    return {field: getattr(transfer, field) for field in TRANSFER_FIELDS}


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
        "checksum": m.checksum,
        "scope": m.scope,
        "src_site": m.src_site,
        "dst_site": m.dst_site,
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


def busiest_pair(campaigns: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """The (src, dst) with the most measurements (of `campaigns`, uuids, when given); ties:
    the one with the largest mean RTT. None when nothing was measured."""
    queryset = Measurement.objects.all()
    if campaigns:
        queryset = queryset.filter(campaign__uuid__in=campaigns)
    found = (
        queryset.order_by()
        .values_list("src__name", "dst__name")
        .annotate(n=Count("*"), rtt=Avg("rtt_ms"))
        .order_by("-n", F("rtt").desc(nulls_last=True), "src__name", "dst__name")
        .first()
    )
    return (found[0], found[1]) if found else None


def pair_first_started(*, src: str, dst: str, campaigns: tuple[str, ...] = ()) -> datetime | None:
    """When the pair's first measurement (of `campaigns`, when given) started."""
    queryset = Measurement.objects.filter(src__name=src, dst__name=dst)
    if campaigns:
        queryset = queryset.filter(campaign__uuid__in=campaigns)
    return queryset.aggregate(first=Min("started"))["first"]

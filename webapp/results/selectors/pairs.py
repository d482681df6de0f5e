"""Reads of one pair (a source and a destination): its measurements' figures over time and
the measurements themselves with their transfers (the pair page)."""

from datetime import datetime

from django.db.models import Prefetch, QuerySet

from webapp.results.models import Measurement, Transfer
from webapp.results.models.measurements import TRANSFER_FIELDS

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

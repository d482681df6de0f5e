"""Reads of the link baselines: the one a measurement is a fraction of, each pair's latest
(the grid), and a pair's over time (the pair page's Figure 5 line)."""

from datetime import datetime

from django.db.models import FloatField, OuterRef, QuerySet, Subquery

from webapp.results.compiled_sql import compiled_query
from webapp.results.models import Baseline, Measurement


def with_baseline(measurements: QuerySet[Measurement]) -> QuerySet[Measurement]:
    """Annotate `baseline_gbps`: the pair's latest successful link baseline that started no
    later than the measurement (a campaign's --baseline runs before the pair's first one)."""
    latest = (
        Baseline.objects.filter(
            src=OuterRef("src"),
            dst=OuterRef("dst"),
            started__lte=OuterRef("started"),
            throughput_gbps__isnull=False,
        )
        .order_by("-started")
        .values("throughput_gbps")[:1]
    )
    return measurements.annotate(baseline_gbps=Subquery(latest, output_field=FloatField()))


def baseline_fraction(throughput_gbps: float | None, baseline_gbps: float | None) -> float | None:
    """TPC throughput as a fraction of what the link carries (None when either is unknown)."""
    if throughput_gbps is None or not baseline_gbps:
        return None
    return throughput_gbps / baseline_gbps


def latest_link_baselines() -> dict[tuple[str, str], float]:
    """(src, dst) -> the pair's latest successful link baseline, for every pair that has one
    (one query; the grid shows each cell's throughput as a fraction of it)."""
    return {(src, dst): gbps for src, dst, gbps in _latest_link_baselines()}


@compiled_query
def _latest_link_baselines() -> QuerySet:
    latest = (
        Baseline.objects.filter(
            src=OuterRef("src"), dst=OuterRef("dst"), throughput_gbps__isnull=False
        )
        .order_by("-started", "-id")
        .values("id")[:1]
    )
    return Baseline.objects.filter(id=Subquery(latest)).values_list(
        "src__name", "dst__name", "throughput_gbps"
    )


def pair_baselines(*, src: str, dst: str, since: datetime) -> list[dict]:
    """The pair's baselines since `since`, oldest first (failed ones too, with their error)."""
    rows = Baseline.objects.filter(src__name=src, dst__name=dst, started__gte=since)
    return list(
        rows.order_by("started").values("started", "throughput_gbps", "streams", "tool", "error")
    )

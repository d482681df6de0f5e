"""How old each pair's latest measurement is, and how old is too old (issue 24: a rotation
measures some pairs only every k cycles, so the grid page says how old a cell is).

A pair is *overdue* when its latest measurement is older than 1.5 x its normal period: the
cycle times k, as the newest campaign that says how it fitted its cycle (Campaign.cycle_fit:
cycle_seconds, k) tells; without one, the orchestrator's default cycle (12 h, the schedule
`0 0,12 * * *`) and k = 1. The grid page reads these through webapp.dashboard.grid; the
MaDDash JSON does not (its pinned queries stay as they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Max
from django.utils import timezone

from webapp.results.choices import Scope
from webapp.results.models import Campaign, Measurement, Node
from webapp.results.vendor_sql import EpochSeconds

DEFAULT_CYCLE_SECONDS = 12 * 3600  # the orchestrator's default schedule, 0 0,12 * * *
OVERDUE_FACTOR = 1.5  # overdue: older than this many normal periods
LOOKBACK_DAYS = 30  # at most this far back for a cell's latest measurement (lookback_seconds)


@dataclass(frozen=True)
class NormalPeriod:
    """How often a pair is measured: every `k` cycles of `cycle_seconds`."""

    cycle_seconds: float
    k: int
    known: bool  # False: no campaign said its cycle (the defaults)

    @property
    def seconds(self) -> float:
        return self.cycle_seconds * self.k

    @property
    def overdue_after(self) -> float:
        """Seconds after which a pair's latest measurement is overdue."""
        return OVERDUE_FACTOR * self.seconds

    def describe(self) -> str:
        every = format_age(self.seconds)
        k = f" ({self.k} cycles of {format_age(self.cycle_seconds)})" if self.k > 1 else ""
        source = "" if self.known else " (the default cycle: no campaign said its own)"
        return f"every {every}{k}{source}"


def _positive(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def normal_period() -> NormalPeriod:
    """The cycle and rotation of the newest campaign that had a cycle (one query; a campaign
    run by hand has none), else the defaults."""
    fits = (
        Campaign.objects.filter(cycle_fit__cycle_seconds__gt=0)
        .order_by("-created", "-id")
        .values_list("cycle_fit", flat=True)[:1]
    )
    fit = fits[0] if fits else None
    if isinstance(fit, dict) and (cycle := _positive(fit.get("cycle_seconds"))):
        k = fit.get("k")
        return NormalPeriod(cycle, k if isinstance(k, int) and k >= 1 else 1, known=True)
    return NormalPeriod(DEFAULT_CYCLE_SECONDS, 1, known=False)


def format_age(seconds: float) -> str:
    """3600 -> '1.0 h', 90 -> '2 min', 3 days -> '3.0 d'."""
    if seconds < 3600:
        return f"{max(0, round(seconds / 60))} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def lookback_seconds(period: NormalPeriod) -> float:
    """How far back a cell's latest measurement is looked for when its window shows none:
    3 normal periods (an overdue pair is older than 1.5), at least a day, at most 30 days."""
    return min(LOOKBACK_DAYS * 86400.0, max(86400.0, 3 * period.seconds))


def pairs_last_seen(
    protocols: list[str],
    sources: set[int],
    *,
    lookback: float,
    auth: str,
    client: str,
    checksum: str,
) -> dict[tuple[str, int, int], int]:
    """(protocol, src id, dst id) -> epoch of the pair's latest host measurement of these
    dimensions (any stream setting) in the last `lookback` seconds, for pairs whose source
    is one of `sources` (node ids). One query, always made, so that a page's count is fixed:
    with no source it asks for node id 0, which no node has (the pair index answers at once).
    """
    since = timezone.now() - timedelta(seconds=lookback)
    rows = (
        Measurement.objects.filter(
            protocol__in=protocols,
            auth=auth,
            client=client,
            checksum=checksum,
            scope=Scope.HOST,
            started__gte=since,
            src_id__in=sorted(sources) or [0],
        )
        .order_by()
        .values_list("protocol", "src_id", "dst_id")
        .annotate(last=EpochSeconds(Max("finished")))
    )
    return {(p, src, dst): int(last) for p, src, dst, last in rows if last is not None}


def node_rows() -> list[tuple[int, str, str]]:
    """(id, name, site) of every node (site: Node.site, as host measurements report it; ''
    for none). One query."""
    return list(Node.objects.order_by().values_list("id", "name", "site"))

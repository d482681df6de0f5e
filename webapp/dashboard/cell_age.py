"""A grid cell's age as the grid page shows it (issue 24): how long ago its latest
measurement finished, and whether that is overdue (webapp.results.grid.ages says when)."""

from __future__ import annotations

from dataclasses import dataclass, field

from webapp.results.grid.ages import NormalPeriod, format_age
from webapp.results.grid.bands import Band


@dataclass(frozen=True)
class Ages:
    """What a table needs to age its cells: the time the page was built, when a pair is
    overdue, and the pairs' latest measurement where the window shows none."""

    now: float
    period: NormalPeriod
    last_seen: dict[tuple[str, str], int] = field(default_factory=dict)  # (src, dst) -> epoch

    @property
    def cutoff(self) -> float:
        """Epoch before which a measurement is overdue."""
        return self.now - self.period.overdue_after

    def of(self, src: str, dst: str, bands: tuple[Band, ...]) -> tuple[str, bool] | None:
        """(age in words, overdue) of a cell worth telling: overdue, or its bands hold no
        result (not run in the window) but the pair was measured before (its latest
        measurement then). None: a cell measured in time, or never measured (within
        ages.lookback_seconds)."""
        last = None
        for band in bands:
            if band[2] and (last is None or band[2] > last):
                last = band[2]
        if last is None:
            last = self.last_seen.get((src, dst))
            if last is None:
                return None
        elif last >= self.cutoff:
            return None
        return format_age(max(0.0, self.now - last)), last < self.cutoff

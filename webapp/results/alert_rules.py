"""When a check alerts (docs/alerts.md): each measurement's own verdict, and the state the
latest verdicts agree on. No queries: services.alerts feeds it the medians and limits.

A measurement's verdict: CRITICAL when every transfer failed or its throughput is below the
grid's critical limit (grid.limits: below WARNING's lower bound); WARNING when below
`fraction` of the check's median over the `days` before it (with at least `min_history`
successful measurements in them); else OK. The state changes when the last `in_a_row`
verdicts agree: all OK -> OK; none OK -> the mildest of them (two CRITICAL -> CRITICAL, a
WARNING and a CRITICAL -> WARNING); a mix of OK and not keeps the state.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from webapp.results.grid.limits import CRITICAL as GRID_CRITICAL
from webapp.results.grid.limits import Limits
from webapp.results.models.alerts import STATE_VALUES, AlertState


@dataclass(frozen=True)
class AlertRules:
    fraction: float = 0.7
    days: float = 20.0
    in_a_row: int = 2
    min_history: int = 3

    @classmethod
    def from_settings(cls) -> "AlertRules":
        return cls(
            fraction=settings.TPCBENCH_ALERT_MEDIAN_FRACTION,
            days=settings.TPCBENCH_ALERT_MEDIAN_DAYS,
            in_a_row=settings.TPCBENCH_ALERT_IN_A_ROW,
            min_history=settings.TPCBENCH_ALERT_MIN_HISTORY,
        )


@dataclass(frozen=True)
class Verdict:
    state: str
    reason: str


def verdict(
    *,
    succeeded: int,
    failed: int,
    throughput_gbps: float | None,
    median: tuple[float, int] | None,
    limits: Limits,
    rules: AlertRules,
) -> Verdict | None:
    """One measurement's verdict; None when it says nothing (no transfer at all).

    `median`: (the check's median throughput before it, how many measurements it is of)."""
    if succeeded == 0 and failed > 0:
        return Verdict(AlertState.CRITICAL, f"all {failed} transfers failed")
    if throughput_gbps is None:
        return None
    if limits.status(throughput_gbps) == GRID_CRITICAL:
        return Verdict(
            AlertState.CRITICAL,
            f"{throughput_gbps:.2f} Gbit/s, below the grid's critical limit "
            f"{limits.warning_gbps:.2f} Gbit/s",
        )
    if median is not None and median[1] >= rules.min_history:
        value, count = median
        if throughput_gbps < rules.fraction * value:
            return Verdict(
                AlertState.WARNING,
                f"{throughput_gbps:.2f} Gbit/s, below {rules.fraction:.0%} of the "
                f"{rules.days:g}-day median {value:.2f} Gbit/s ({count} measurements)",
            )
    return Verdict(AlertState.OK, f"{throughput_gbps:.2f} Gbit/s")


def next_state(state: str, verdicts: Sequence[str], rules: AlertRules) -> str | None:
    """The state the last `rules.in_a_row` verdicts agree on, if it differs from `state`."""
    last = list(verdicts[-rules.in_a_row :])
    if len(last) < rules.in_a_row:
        return None
    if all(v == AlertState.OK for v in last):
        agreed = AlertState.OK
    elif any(v == AlertState.OK for v in last):
        return None
    else:
        agreed = min(last, key=lambda v: STATE_VALUES[v])
    return None if agreed == state else str(agreed)

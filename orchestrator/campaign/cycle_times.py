"""A scheduled campaign's cycle and deadline, read from its cron expression: the cycle is the
time between the next two firings (12 h for "0 0,12 * * *"), the deadline the next firing."""

from __future__ import annotations

from datetime import datetime

from croniter import croniter


def cycle_seconds(expression: str, now: datetime) -> float:
    """The cycle: seconds between the cron expression's next two firings after `now`."""
    times = croniter(expression, now)
    first: datetime = times.get_next(datetime)
    second: datetime = times.get_next(datetime)
    return (second - first).total_seconds()


def next_firing(expression: str, after: datetime) -> datetime:
    """The cron expression's first firing strictly after `after` (a campaign's deadline)."""
    return croniter(expression, after).get_next(datetime)

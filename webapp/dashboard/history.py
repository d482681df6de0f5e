"""Tables of the pair page, shaped from `results.selectors.pairs` rows."""

from __future__ import annotations

from datetime import datetime

from webapp.dashboard.plots import dimension_order
from webapp.results.choices import Outcome
from webapp.results.phases import median, setup_s
from webapp.results.selectors.baselines import baseline_fraction

RECENT_MEASUREMENTS = 8


def as_datetime(value: datetime | str | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _started(row: dict) -> datetime:
    return as_datetime(row["started"]) or datetime.min


def check_key(row: dict) -> tuple[str, str, str, int]:
    """(protocol, auth, client, streams): what a grid band is of."""
    return (
        row["protocol"],
        row.get("auth") or "x509",
        row.get("client") or "native",
        int(row["streams"]),
    )


def latest_per_check(history: list[dict]) -> list[dict]:
    """The newest measurement of each (protocol, auth, client, streams), ordered like the
    grid's bands."""
    newest: dict[tuple[str, str, str, int], dict] = {}
    for row in history:
        key = check_key(row)
        if key not in newest or _started(row) > _started(newest[key]):
            newest[key] = row
    ordered = sorted(newest.items(), key=lambda kv: (dimension_order(*kv[0][:3]), -kv[0][3]))
    return [{**row, "started": as_datetime(row["started"])} for _, row in ordered]


def with_link_fraction(latest: list[dict], baselines: list[dict]) -> list[dict]:
    """Each row with `baseline_gbps`, `of_link` (throughput / baseline) and
    `makespan_of_link` (makespan / baseline): the pair's latest successful baseline that
    started no later than the measurement, as the API reads it.

    `above_link`: the paper's throughput reads above what the link carried. K x S x 8 /
    mean(duration) can, when the K transfers did not all run at once (one that ran alone
    part of the time is fast, so the mean duration is short); the makespan, every byte over
    the time from the first start to the last end, cannot: the page shows it beside.
    `makespan_above_link`: that too reads above the baseline, so the baseline is below what
    these transfers carried and is no measure of the link."""
    measured = sorted(
        ((as_datetime(b["started"]), b["throughput_gbps"]) for b in baselines
         if b.get("throughput_gbps")),
        key=lambda pair: pair[0],
    )  # fmt: skip
    rows = []
    for row in latest:
        before = [gbps for started, gbps in measured if started <= _started(row)]
        baseline = before[-1] if before else None
        fraction = baseline_fraction(row.get("throughput_gbps"), baseline)
        makespan = baseline_fraction(row.get("makespan_gbps"), baseline)
        rows.append(
            {
                **row,
                "baseline_gbps": baseline,
                "of_link": fraction,
                "makespan_of_link": makespan,
                "above_link": fraction is not None and fraction > 1,
                "makespan_above_link": makespan is not None and makespan > 1,
            }
        )
    return rows


def _transfer(row: dict) -> dict:
    start, end = as_datetime(row.get("start")), as_datetime(row.get("end"))
    duration = (end - start).total_seconds() if start and end else None
    setup = setup_s(row.get("phases") or {})
    return {**row, "start": start, "end": end, "duration_s": duration, "setup_s": setup}


def phase_summary(transfers: list[dict]) -> dict:
    """Median setup (the phases before streaming) and median streaming rate of the
    successful transfers; None where none recorded it."""
    ok = [t for t in transfers if t.get("outcome") == Outcome.SUCCESS]
    return {
        "median_setup_s": median(setup_s(t.get("phases") or {}) for t in ok),
        "median_streaming_gbps": median(t.get("streaming_gbps") for t in ok),
    }


def with_phase_summaries(rows: list[dict], measured: list[dict]) -> list[dict]:
    """Each row with its measurement's phase_summary (`measured`: rows with transfers, by id)."""
    by_id = {m["id"]: m["transfers"] for m in measured}
    return [{**row, **phase_summary(by_id.get(row.get("id"), []))} for row in rows]


def recent_measurements(history: list[dict], limit: int = RECENT_MEASUREMENTS) -> list[dict]:
    """The newest measurements, newest first, with their transfers and durations."""
    rows = sorted(history, key=_started, reverse=True)[:limit]
    return [
        {
            **row,
            **phase_summary(row.get("transfers") or []),
            "started": as_datetime(row["started"]),
            "transfers": [
                _transfer(t) for t in sorted(row.get("transfers") or [], key=lambda t: t["index"])
            ],
        }
        for row in rows
    ]

"""Tables of the pair page, shaped from `results.selectors.pairs` rows."""

from __future__ import annotations

from datetime import datetime

from webapp.dashboard.plots import dimension_label, dimension_order, dimensions_of
from webapp.results.choices import DIMENSION_DEFAULTS, Outcome
from webapp.results.phases import CHECKSUM_PHASE, REDIRECT_PHASE, median, setup_s
from webapp.results.selectors.baselines import baseline_fraction

RECENT_MEASUREMENTS = 8


def as_datetime(value: datetime | str | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _started(row: dict) -> datetime:
    return as_datetime(row["started"]) or datetime.min


def check_key(row: dict) -> tuple[tuple[str, ...], int]:
    """((protocol, auth, client, checksum), streams): what a grid band is of."""
    return dimensions_of(row), int(row["streams"])


def latest_per_check(history: list[dict]) -> list[dict]:
    """The newest measurement of each (protocol, auth, client, checksum, streams), ordered
    like the grid's bands."""
    newest: dict[tuple[tuple[str, ...], int], dict] = {}
    for row in history:
        key = check_key(row)
        if key not in newest or _started(row) > _started(newest[key]):
            newest[key] = row
    ordered = sorted(newest.items(), key=lambda kv: (dimension_order(*kv[0][0]), -kv[0][1]))
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


def _duration_s(row: dict) -> float | None:
    start, end = as_datetime(row.get("start")), as_datetime(row.get("end"))
    return (end - start).total_seconds() if start and end else None


def _transfer(row: dict) -> dict:
    start, end = as_datetime(row.get("start")), as_datetime(row.get("end"))
    phases = row.get("phases") or {}
    return {
        **row,
        "start": start,
        "end": end,
        "duration_s": _duration_s(row),
        "setup_s": setup_s(phases),
        "checksum_s": phases.get(CHECKSUM_PHASE),
        "redirect_s": phases.get(REDIRECT_PHASE),
    }


def servers_known(measurements: list[dict]) -> bool:
    """Whether any transfer of `measurements` says which data servers served it or followed
    a redirect (site measurements, issue 23): the pair page's servers column shows then."""
    return any(
        t.get("source_server") or t.get("destination_server") or t.get("redirects")
        for m in measurements
        for t in m.get("transfers") or []
    )


def checksum_share(transfer: dict) -> float | None:
    """The checksum step's share of a transfer's duration (None: no step, or no duration)."""
    seconds = (transfer.get("phases") or {}).get(CHECKSUM_PHASE)
    duration = _duration_s(transfer)
    return seconds / duration if seconds is not None and duration else None


def phase_summary(transfers: list[dict]) -> dict:
    """Over the successful transfers, the medians of: setup (the phases before streaming),
    the streaming rate, the checksum step's seconds and its share of the transfer's duration
    (each transfer's share, then their median); None where none recorded it."""
    ok = [t for t in transfers if t.get("outcome") == Outcome.SUCCESS]
    share = median(checksum_share(t) for t in ok)
    return {
        "median_setup_s": median(setup_s(t.get("phases") or {}) for t in ok),
        "median_streaming_gbps": median(t.get("streaming_gbps") for t in ok),
        "median_checksum_s": median((t.get("phases") or {}).get(CHECKSUM_PHASE) for t in ok),
        "median_checksum_share": share,
        "median_checksum_percent": None if share is None else share * 100,
    }


def checksum_costs(measurements: list[dict]) -> list[dict]:
    """What the checksum step cost, per (protocol, auth, client, checksum) with one, over the
    successful transfers of `measurements` (rows with transfers) that recorded it: its
    label, the median seconds, the median share of a transfer's duration, how many."""
    groups: dict[tuple[str, ...], list[dict]] = {}
    for m in measurements:
        key = dimensions_of(m)
        if key[-1] == DIMENSION_DEFAULTS["checksum"]:
            continue
        ok = [t for t in m.get("transfers") or [] if t.get("outcome") == Outcome.SUCCESS]
        groups.setdefault(key, []).extend(
            t for t in ok if CHECKSUM_PHASE in (t.get("phases") or {})
        )
    costs = []
    for key, transfers in sorted(groups.items(), key=lambda kv: dimension_order(*kv[0])):
        if transfers:
            summary = phase_summary(transfers)
            costs.append(
                {
                    "label": dimension_label(*key),
                    "checksum": key[-1],
                    "median_s": summary["median_checksum_s"],
                    "median_percent": summary["median_checksum_percent"],
                    "transfers": len(transfers),
                }
            )
    return costs


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

"""Plausible synthetic history (clearly labelled: nodes 'synthetic-NN', site 'synthetic').

Used by `manage.py load_demo_data` for development and the browser test, and by
bench/webapp.py for the scale benchmark. Deterministic for a given seed and end time.
Model: throughput falls with RTT (the paper's Figure 7), 8 streams beat 1 stream by more on
long paths (Figure 8); a few pairs are slow, a few transfers fail, now and then all fail.
"""

import math
import random
import uuid as uuid_lib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from webapp.results.choices import ErrorClass, Outcome

SITE = "synthetic"
SCHEDULE = "synthetic: twice daily"
GIB = 2**30
# Spacing of measurements within a campaign (one at a time, as the orchestrator runs them).
STEP = timedelta(seconds=5)


@dataclass
class SyntheticCampaign:
    uuid: uuid_lib.UUID
    started: datetime
    finished: datetime
    measurements: list[dict] = field(default_factory=list)


def node_name(i: int) -> str:
    return f"synthetic-{i:02d}"


def node_positions(nodes: int, rng: random.Random) -> list[tuple[float, float]]:
    """Sites on a 60 ms x 25 ms 'continent': RTT is the distance between two of them."""
    return [(rng.uniform(0, 60), rng.uniform(0, 25)) for _ in range(nodes)]


def pair_rtt_ms(a: tuple[float, float], b: tuple[float, float]) -> float:
    return round(1.0 + math.dist(a, b), 2)


def expected_gbps(protocol: str, streams: int, rtt_ms: float) -> float:
    base = 62.0 - 0.45 * rtt_ms if streams > 1 else 38.0 - 0.55 * rtt_ms
    if protocol == "gridftp":
        base *= 0.85
    return max(base, 1.5)


def _transfers(
    rng: random.Random,
    *,
    start: datetime,
    gbps: float,
    k: int,
    file_size: int,
    fail_some: int,
    fail_all: bool,
) -> list[dict]:
    mean_seconds = k * file_size * 8 / (gbps * 1e9)
    transfers = []
    for index in range(k):
        t_start = start + timedelta(seconds=rng.uniform(0, 0.3))
        failing = fail_all or index < fail_some
        seconds = mean_seconds * rng.uniform(0.9, 1.1)
        if failing:
            seconds = seconds if not fail_all else rng.uniform(1, 3)
        t_end = t_start + timedelta(seconds=seconds)
        if failing:
            error = ErrorClass.TIMEOUT if not fail_all else ErrorClass.CONNECT
            message = (
                "transfer timed out after 300 s"
                if error == ErrorClass.TIMEOUT
                else "connection refused by destination"
            )
            transfers.append(
                {
                    "index": index,
                    "start": t_start,
                    "end": t_end,
                    "bytes": 0,
                    "outcome": Outcome.FAILURE.value,
                    "error_class": error.value,
                    "message": message,
                }
            )
        else:
            transfers.append(
                {
                    "index": index,
                    "start": t_start,
                    "end": t_end,
                    "bytes": file_size,
                    "outcome": Outcome.SUCCESS.value,
                    "error_class": None,
                    "message": "",
                }
            )
    return transfers


def synthetic_history(
    *,
    nodes: int,
    days: int,
    end: datetime,
    protocols: tuple[str, ...] = ("https", "gridftp"),
    stream_settings: tuple[int, ...] = (8, 1),
    campaigns_per_day: int = 2,
    transfers: int = 11,
    file_size: int = GIB,
    seed: int = 4,
) -> Iterator[SyntheticCampaign]:
    """Campaigns, oldest first, ending before `end`; each with its measurement payloads."""
    rng = random.Random(seed)
    positions = node_positions(nodes, rng)
    names = [node_name(i) for i in range(nodes)]
    pairs = [(a, b) for a in range(nodes) for b in range(nodes) if a != b]
    slow_pairs = set(rng.sample(pairs, k=max(1, len(pairs) // 25)))
    period = timedelta(days=1) / campaigns_per_day
    count = days * campaigns_per_day
    first = end - period * count
    for c in range(count):
        started = first + period * c
        campaign = SyntheticCampaign(
            uuid=uuid_lib.UUID(int=rng.getrandbits(128), version=4),
            started=started,
            finished=started,
        )
        at = started
        for a, b in pairs:
            rtt = pair_rtt_ms(positions[a], positions[b])
            for protocol in protocols:
                for streams in stream_settings:
                    gbps = expected_gbps(protocol, streams, rtt) * rng.uniform(0.85, 1.1)
                    if (a, b) in slow_pairs:
                        gbps *= 0.2
                    roll = rng.random()
                    fail_all, fail_some = roll < 0.004, (1 if roll < 0.03 else 0)
                    items = _transfers(
                        rng,
                        start=at,
                        gbps=gbps,
                        k=transfers,
                        file_size=file_size,
                        fail_some=fail_some,
                        fail_all=fail_all,
                    )
                    finished = max(t["end"] for t in items)
                    campaign.measurements.append(
                        {
                            "uuid": uuid_lib.UUID(int=rng.getrandbits(128), version=4),
                            "campaign": campaign.uuid,
                            "src": names[a],
                            "dst": names[b],
                            "protocol": protocol,
                            "streams": streams,
                            "file_size": file_size,
                            "rtt_ms": round(rtt * rng.uniform(0.98, 1.05), 3),
                            "started": at,
                            "finished": finished,
                            "transfers": items,
                        }
                    )
                    at += STEP
        campaign.finished = (
            max(m["finished"] for m in campaign.measurements) if campaign.measurements else started
        )
        yield campaign

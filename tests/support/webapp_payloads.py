"""What the webapp tests send: measurements, link baselines and prelim runs, as the
orchestrator's reporter posts them (DESIGN.md's shapes)."""

from __future__ import annotations

import uuid as uuid_lib
from datetime import datetime, timedelta

from django.utils import timezone

GIB = 2**30
MIB = 2**20


def baseline(started=None, **overrides) -> dict:
    """A link baseline as `tpcbench baseline` sends it (orchestrator Baseline.to_json)."""
    started = started or timezone.now() - timedelta(hours=2)
    return {
        "uuid": str(uuid_lib.uuid4()),
        "campaign": None,
        "src": "node-a",
        "dst": "node-b",
        "streams": 8,
        "duration_s": 10,
        "tool": "iperf3",
        "started": started.isoformat(),
        "finished": (started + timedelta(seconds=11)).isoformat(),
        "throughput_gbps": 40.0,
        "error": "",
        **overrides,
    }


def point(method: str, concurrency: int, gbps: float, size: int = 64 * MIB) -> dict:
    return {
        "method": method, "file_size": size, "concurrency": concurrency,
        "throughput_gbps": gbps, "makespan_gbps": gbps * 0.9, "succeeded": concurrency,
        "failed": 0, "error": "",
    }  # fmt: skip


def prelim_run(kind: str = "concurrency", points: list[dict] | None = None, **overrides) -> dict:
    started = timezone.now() - timedelta(hours=1)
    if points is None:
        points = [
            point(m, c, g * c)
            for c in (1, 2, 3)
            for m, g in (("cp", 9.0), ("https", 3.0), ("gridftp", 2.0))
        ]
    return {
        "uuid": str(uuid_lib.uuid4()),
        "kind": kind,
        "node": "node-a",
        "streams": 1,
        "started": started.isoformat(),
        "finished": (started + timedelta(minutes=5)).isoformat(),
        "points": points,
        **overrides,
    }


def payload(
    *,
    src: str = "node-a",
    dst: str = "node-b",
    protocol: str = "https",
    streams: int = 8,
    k: int = 11,
    seconds: float = 8.0,
    failed: int = 0,
    started: datetime | None = None,
    campaign: str | None = None,
    rtt_ms: float | None = 12.5,
    error_class: str = "timeout",
    file_size: int = GIB,
    auth: str | None = None,
    client: str | None = None,
    phases: bool = False,
) -> dict:
    """A JSON-ready measurement as the orchestrator sends it; every transfer lasts `seconds`.

    `auth`, `client`: sent when given (older orchestrators sent neither); `phases`: each
    transfer with its phases (a tenth of it setup) and streaming rate, as the orchestrator
    sends them now."""
    started = started or timezone.now() - timedelta(hours=1)
    transfers = []
    for index in range(k):
        ok = index >= failed
        transfers.append(
            {
                "index": index,
                "start": (started + timedelta(seconds=0.1 * index)).isoformat(),
                "end": (started + timedelta(seconds=0.1 * index + seconds)).isoformat(),
                "bytes": file_size if ok else 0,
                "outcome": "success" if ok else "failure",
                "error_class": None if ok else error_class,
                "message": "" if ok else f"{error_class} talking to {dst}",
            }
        )
        if phases:
            setup = seconds / 10
            transfers[-1]["phases"] = (
                {"connect": setup / 2, "handshake": setup / 4, "request": setup / 4}
                | {"streaming": seconds - setup}
                if ok
                else {"connect": seconds}
            )
            transfers[-1]["streaming_gbps"] = (
                file_size * 8 / (seconds - setup) / 1e9 if ok else None
            )
    dimensions = {"auth": auth, "client": client}
    return {
        **{name: value for name, value in dimensions.items() if value is not None},
        "uuid": str(uuid_lib.uuid4()),
        "campaign": campaign,
        "src": src,
        "dst": dst,
        "protocol": protocol,
        "streams": streams,
        "file_size": file_size,
        "rtt_ms": rtt_ms,
        "started": started.isoformat(),
        "finished": (started + timedelta(seconds=0.1 * (k - 1) + seconds)).isoformat(),
        # Deliberately wrong: the server must recompute these.
        "throughput_gbps": 999.0,
        "makespan_gbps": 999.0,
        "succeeded": 0,
        "failed": 0,
        "transfers": transfers,
    }

"""What the site tests send (issue 23): redirector lookups as the orchestrator posts them
(the contract in docs/api.md), and scaling sweeps of site-scope measurements."""

from __future__ import annotations

import uuid as uuid_lib
from datetime import datetime, timedelta

from django.utils import timezone

from tests.support.webapp_payloads import payload

GIB = 2**30
SECONDS_AT_1_GBPS = GIB * 8 / 1e9  # one 1 GiB transfer at 1 Gbps


def lookup(
    *,
    level: str = "regional",
    site: str = "a",
    entry: str | None = None,
    protocol: str = "https",
    step_seconds: tuple[float, ...] = (0.040, 0.030, 0.011),
    level_rtt_ms: float | None = 30.0,
    outcome: str = "success",
    started: datetime | None = None,
    campaign: str | None = None,
) -> dict:
    """A lookup climbing from `entry` (by default the level's own redirector) down to data
    server <site>-2 in len(step_seconds) requests; hops and seconds as a client adds them
    up (the server recomputes both)."""
    entry = entry or (f"{site}-rdr" if level == "local" else level)
    servers = [*[entry, f"{site}-rdr"][: len(step_seconds) - 1], f"{site}-2"]
    steps = [
        {"server": f"{s}:1094", "seconds": t} for s, t in zip(servers, step_seconds, strict=True)
    ]
    ok = outcome == "success"
    return {
        "uuid": str(uuid_lib.uuid4()),
        "campaign": campaign,
        "protocol": protocol,
        "entry": entry,
        "level": level,
        "site": site,
        "level_rtt_ms": level_rtt_ms,
        "started": (started or timezone.now() - timedelta(minutes=30)).isoformat(),
        "seconds": sum(step_seconds) if ok else None,
        "hops": len(steps) - 1,
        "steps": steps,
        "data_server": steps[-1]["server"] if ok else None,
        "outcome": outcome,
        "error_class": None if ok else "timeout",
        "message": "" if ok else "no answer from the data server",
    }


def sweep_point(
    *,
    hosts: int | None,
    gbps: float,
    src_site: str = "a",
    dst_site: str = "b",
    protocol: str = "https",
    streams: int = 8,
    k: int = 4,
    campaign: str | None = None,
) -> dict:
    """A site-scope measurement from `src_site` to `dst_site` of K 1 GiB transfers at an
    aggregate of `gbps` (the paper's throughput: K x S / mean duration); `hosts` m spreads
    them over data servers 1..m of each site (null: through the fronts)."""
    body = payload(
        src=f"{src_site}-rdr",
        dst=f"{dst_site}-rdr",
        protocol=protocol,
        streams=streams,
        k=k,
        seconds=k * SECONDS_AT_1_GBPS / gbps,
        campaign=campaign,
    )
    body.update(scope="site", src_site=src_site, dst_site=dst_site, hosts=hosts)
    for i, transfer in enumerate(body["transfers"]):
        host = 1 + i % (hosts or 1)
        transfer["source_server"] = f"{src_site}-{host}:1094"
        transfer["destination_server"] = f"{dst_site}-{host}:1094"
        transfer["redirects"] = 0 if hosts else 1
    return body

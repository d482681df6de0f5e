"""Measurement payloads with chosen figures, stored through the real ingest service.

The page tests use these to put exactly known values in the database (a cell of 42 Gbps,
a pair whose transfers all time out) and then look for them on the pages.
"""

from __future__ import annotations

import uuid as uuid_lib
from datetime import datetime, timedelta

from results.services import measurement_ingest

GIB = 2**30


def measurement_payload(
    *,
    src: str,
    dst: str,
    protocol: str = "https",
    streams: int = 8,
    gbps: float = 40.0,
    started: datetime,
    transfers: int = 3,
    failed: int = 0,
    error_class: str = "timeout",
    message: str = "transfer timed out after 600 s",
    rtt_ms: float | None = 10.0,
    campaign: uuid_lib.UUID | None = None,
    file_size: int = GIB,
) -> dict:
    """K transfers of `file_size` bytes, each lasting so that the throughput is `gbps`."""
    ok_count = transfers - failed
    seconds = ok_count * file_size * 8 / (gbps * 1e9) if ok_count and gbps else 60.0
    duration = timedelta(seconds=seconds)
    rows = []
    for index in range(transfers):
        ok = index >= failed
        rows.append(
            {
                "index": index,
                "start": started,
                "end": started + duration,
                "bytes": file_size if ok else 0,
                "outcome": "success" if ok else "failure",
                "error_class": None if ok else error_class,
                "message": "" if ok else message,
            }
        )
    return {
        "uuid": uuid_lib.uuid4(),
        "campaign": campaign,
        "src": src,
        "dst": dst,
        "protocol": protocol,
        "streams": streams,
        "file_size": file_size,
        "rtt_ms": rtt_ms,
        "started": started,
        "finished": started + duration,
        "transfers": rows,
    }


def store(**kwargs) -> dict:
    """Ingest one measurement_payload(**kwargs); returns the payload."""
    payload = measurement_payload(**kwargs)
    measurement_ingest(payload=payload)
    return payload

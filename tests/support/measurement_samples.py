"""A valid measurement message, as the orchestrator sends it, for the reporter tests."""

from __future__ import annotations

import uuid


def sample_measurement(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "uuid": str(uuid.uuid4()),
        "campaign": None,
        "src": "lab-1",
        "dst": "lab-2",
        "protocol": "https",
        "streams": 8,
        "file_size": 1024,
        "rtt_ms": 0.05,
        "started": "2026-11-21T12:00:00.000000Z",
        "finished": "2026-11-21T12:00:01.000000Z",
        "throughput_gbps": 1.0,
        "makespan_gbps": 1.0,
        "succeeded": 1,
        "failed": 0,
        "transfers": [
            {
                "index": 0,
                "start": "2026-11-21T12:00:00.000000Z",
                "end": "2026-11-21T12:00:01.000000Z",
                "bytes": 1024,
                "outcome": "success",
                "error_class": None,
                "message": "",
            }
        ],
    }
    data.update(overrides)
    return data

"""Throughput definitions and the measurement JSON shape the webapp ingests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from orchestrator.measurement.record import MeasurementRecord, makespan_gbps, throughput_gbps
from orchestrator.transfers.record import Clock, TransferRecord

GIB = 2**30


def test_throughput_is_k_times_size_over_mean_duration() -> None:
    # 11 x 1 GiB, mean 8 s -> 11 * 2^30 * 8 / 8 / 1e9 Gbit/s
    assert throughput_gbps(GIB, [7.0, 9.0] + [8.0] * 9) == pytest.approx(11 * GIB / 1e9)
    assert throughput_gbps(GIB, []) == 0.0


def test_makespan_uses_first_start_and_last_end() -> None:
    assert makespan_gbps(GIB, [(10.0, 14.0), (11.0, 18.0)]) == pytest.approx(2 * GIB * 8 / 8 / 1e9)
    assert makespan_gbps(GIB, []) == 0.0


def transfer(index: int, start: float, end: float, ok: bool, clock: Clock) -> TransferRecord:
    return TransferRecord(
        index=index,
        protocol="https",
        source_url="https://a/s",
        destination_url="https://b/d",
        start=start,
        end=end,
        started=clock.wall(start),
        ended=clock.wall(end),
        bytes=GIB if ok else 0,
        outcome="success" if ok else "failure",
        error_class=None if ok else "timeout",
        message="" if ok else "no verdict",
    )


def measurement(protocol: str, streams: int, rtt_ms: float | None, transfers: list) -> Any:
    now = datetime.now(UTC)
    return MeasurementRecord(
        "u-1", None, "lab-1", "lab-2", protocol, streams, GIB, rtt_ms, now, now, transfers
    )


def test_only_successes_count_and_json_has_the_design_shape() -> None:
    clock = Clock()
    base = clock.now()
    record = measurement(
        "https",
        8,
        12.5,
        [transfer(0, base, base + 4.0, True, clock), transfer(1, base, base + 600.0, False, clock)],
    )
    data = record.to_json()
    assert set(data) >= {
        "uuid", "campaign", "src", "dst", "protocol", "streams", "file_size", "rtt_ms",
        "started", "finished", "throughput_gbps", "makespan_gbps", "succeeded", "failed",
        "transfers",
    }  # fmt: skip
    assert (data["succeeded"], data["failed"]) == (1, 1)
    assert data["throughput_gbps"] == pytest.approx(GIB * 8 / 4.0 / 1e9, rel=1e-5)
    first, second = data["transfers"]
    assert set(first) >= {"index", "start", "end", "bytes", "outcome", "error_class", "message"}
    assert first["start"].endswith("Z") and first["error_class"] is None
    assert (second["outcome"], second["error_class"]) == ("failure", "timeout")
    # Wall-clock stamps come from the monotonic clock: end - start equals the duration.
    start = datetime.fromisoformat(first["start"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(first["end"].replace("Z", "+00:00"))
    assert (end - start).total_seconds() == pytest.approx(4.0, abs=1e-5)


def test_a_measurement_without_success_has_no_throughput() -> None:
    clock = Clock()
    base = clock.now()
    record = measurement(
        "gridftp", 1, None, [transfer(i, base, base + 1.0, False, clock) for i in range(3)]
    )
    data = record.to_json()
    assert (data["succeeded"], data["failed"]) == (0, 3)
    assert data["throughput_gbps"] is None and data["makespan_gbps"] is None

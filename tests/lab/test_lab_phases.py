"""Where a transfer's time goes, on real lab servers: every protocol reports its phases.

Measurements of 16 MiB and 64 MiB, 1 and 8 streams, through the same `run_measurement` the
campaigns use; the per-transfer JSON must carry phases that add up to the duration.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.servers.source_file import ensure_source_file
from tests.support.running_lab import TEST_FILE_SIZE, RunningLab

pytestmark = pytest.mark.lab
BIGGER_FILE_SIZE = 64 << 20
# What each tool can see of a transfer (docs/measurements.md, "Where a transfer's time goes").
EXPECTED_PHASES = {
    # x509: a macaroon for the other leg first (transfers/macaroons.py)
    "https": ["authorize", "connect", "handshake", "request", "streaming", "close"],
    "gridftp": ["connect", "handshake", "request", "streaming", "close"],
    # GSI: the servers ask for it
    "root": ["connect", "handshake", "request", "streaming", "poll", "close"],
}


@pytest.fixture(scope="module")
def lab_with_a_bigger_source(running_lab: RunningLab) -> RunningLab:
    """The lab's source node also holds a 64 MiB source (the lab writes only one size)."""
    source = running_lab.inventory.nodes[0]
    path, _ = ensure_source_file(Path(source.data_root), BIGGER_FILE_SIZE)
    os.chmod(path, 0o644)  # the servers run as an unprivileged user
    return running_lab


def measure(
    lab: RunningLab, protocol: str, streams: int, size: int, source_path: str | None = None
) -> MeasurementRecord:
    src, dst = lab.inventory.nodes[0], lab.inventory.nodes[1]
    request = MeasurementRequest.between(
        src, dst, protocol, streams, transfers=2, file_size=size, source_path=source_path
    )
    return asyncio.run(
        run_measurement(request, creds=lab.inventory.client, timeout=120, measure_latency=False)
    )


def assert_phases_add_up(entry: dict) -> None:
    phases = entry["phases"]
    assert phases, entry
    assert all(seconds >= 0 for seconds in phases.values()), phases
    assert sum(phases.values()) == pytest.approx(entry["duration_s"], rel=0.05), entry


@pytest.mark.parametrize("streams", [1, 8])
@pytest.mark.parametrize("size", [TEST_FILE_SIZE, BIGGER_FILE_SIZE], ids=["16MiB", "64MiB"])
@pytest.mark.parametrize("protocol", sorted(EXPECTED_PHASES))
def test_every_transfer_reports_phases_that_add_up_to_its_duration(
    lab_with_a_bigger_source: RunningLab, protocol: str, size: int, streams: int
) -> None:
    record = measure(lab_with_a_bigger_source, protocol, streams, size)
    assert record.succeeded == 2, [t.message for t in record.transfers]
    for transfer, entry in zip(record.transfers, record.to_json()["transfers"], strict=True):
        assert list(entry["phases"]) == EXPECTED_PHASES[protocol]
        assert_phases_add_up(entry)
        assert entry["streaming_gbps"] > 0
        # Setup is everything before the first progress: the phases before streaming.
        before = EXPECTED_PHASES[protocol].index("streaming")
        setup = sum(list(transfer.phases.values())[:before])
        assert transfer.setup_s == pytest.approx(setup)
        assert transfer.streaming_gbps == pytest.approx(
            size * 8 / transfer.phases["streaming"] / 1e9
        )


@pytest.mark.parametrize("protocol", sorted(EXPECTED_PHASES))
def test_a_failed_transfer_reports_the_phases_it_reached(
    running_lab: RunningLab, protocol: str
) -> None:
    missing = "/tpcbench-source-missing"  # a name the orchestrator may read: not an auth failure
    record = measure(running_lab, protocol, 1, TEST_FILE_SIZE, source_path=missing)
    assert record.failed == 2
    for transfer, entry in zip(record.transfers, record.to_json()["transfers"], strict=True):
        assert transfer.error_class == "not-found", transfer.message
        assert "\x00" not in transfer.message  # xrdcp's ends with one; the webapp refuses it
        assert_phases_add_up(entry)
        assert next(iter(entry["phases"])) == EXPECTED_PHASES[protocol][0]
        if protocol != "https":  # XRootD answers a COPY 201 before it knows the source's 404
            assert "streaming" not in entry["phases"]
            assert entry["streaming_gbps"] is None

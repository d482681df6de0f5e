"""The emulated WAN applies to the podman runtime too: the containers live in the nodes'
namespaces, so their traffic crosses the router's FORWARD path and its delay program."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.lab import LabNetwork, lab_status, start_lab, stop_lab
from orchestrator.latency import rtt_origin
from orchestrator.latency.target import rtt_within_target
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest

pytestmark = pytest.mark.lab
NETWORK = LabNetwork(prefix="tpcwp", subnet_offset=125)


def test_containers_see_the_emulated_rtt_and_still_copy(images: dict[str, str]) -> None:
    home = Path(tempfile.mkdtemp(prefix="tpcbench-podmanwan-"))
    home.chmod(0o755)
    CertificateAuthority.init(home / "ca")
    try:
        inventory = start_lab(
            home, 2, 4 << 20, network=NETWORK, runtime="podman", rtt="uniform:20ms"
        )
        src, dst = inventory.nodes
        assert rtt_origin(src) == "probe"  # measured by the probe container in lab-1
        status = lab_status(home)
        assert status.wan["delay_line"]["state"] == "running"
        for node in status.nodes:
            for other, rtt in status.pair_rtts(node).items():
                assert rtt["target_ms"] == 20.0
                assert rtt_within_target(rtt["measured_ms"], 20.0), (node.name, other, rtt)
        record = asyncio.run(
            run_measurement(
                MeasurementRequest.between(src, dst, "https", 1, transfers=2, file_size=4 << 20),
                creds=inventory.client,
                timeout=120,
            )
        )
        assert (record.succeeded, record.failed) == (2, 0), [t.message for t in record.transfers]
        assert rtt_within_target(record.rtt_ms, 20.0), record.rtt_ms
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)

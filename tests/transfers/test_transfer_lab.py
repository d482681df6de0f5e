"""Every protocol through the real lab (`tpcbench lab`): nodes in network namespaces.

The lab API starts its own 2-node lab here (own prefix and subnet, so it never meets a
lab someone else runs). Bytes are verified at the destination before cleanup, and the
RTT is probed from inside the source node's namespace.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.endpoints import source_name
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.measurement.run import remove_destination_files, run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.transfers import TRANSFER_TOOLS

pytestmark = pytest.mark.lab
FILE_SIZE = 8 << 20
NETWORK = LabNetwork(prefix="tpctr", subnet_offset=160)


@pytest.fixture(scope="module")
def lab() -> Iterator[LabInventory]:
    with temporary_lab("tpcbench-transfers-lab-", 2, FILE_SIZE, mode=NETNS, network=NETWORK) as (
        _,
        inventory,
    ):
        yield inventory


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("streams", [1, 8])
@pytest.mark.parametrize("protocol", sorted(TRANSFER_TOOLS))
def test_lab_transfer_delivers_the_exact_bytes(
    lab: LabInventory, protocol: str, streams: int
) -> None:
    src, dst = lab.nodes
    record = asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                src, dst, protocol, streams, transfers=3, file_size=FILE_SIZE
            ),
            creds=lab.client, timeout=120, keep_files=True,
        )
    )  # fmt: skip
    assert (record.succeeded, record.failed) == (3, 0), [t.message for t in record.transfers]
    expected = md5(Path(src.data_root) / source_name(FILE_SIZE).lstrip("/"))
    for transfer in record.transfers:
        name = destination_name(record.uuid, transfer.index, record.protocol)
        written = Path(dst.data_root) / name.lstrip("/")
        assert md5(written) == expected
    # Probed from inside lab-1's namespace towards lab-2's address.
    assert record.rtt_ms is not None and record.rtt_ms > 0
    assert asyncio.run(remove_destination_files(record, dst, lab.client)) == []
    names = [destination_name(record.uuid, t.index, protocol) for t in record.transfers]
    assert not any((Path(dst.data_root) / n.lstrip("/")).exists() for n in names)

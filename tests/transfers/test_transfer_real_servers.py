"""Every protocol against real XRootD and GridFTP servers: data verified, failures classified.

Marked `lab`: needs root, xrootd, globus-gridftp-server and globus-url-copy (all installed by
scripts/install-system-deps.sh).
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, source_name
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import remove_destination_files, run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.transfers import TRANSFER_TOOLS, HttpsTpc
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.process import TERMINATE_GRACE
from orchestrator.transfers.record import TransferRecord
from tests.support.processes import leftovers
from tests.support.two_nodes import BIG, SMALL, Node, TwoNodes, measure

# a name the orchestrator may read (servers/access.py), so its absence is not an auth error
MISSING_SOURCE = "/tpcbench-source-missing"

pytestmark = pytest.mark.lab
PROTOCOLS = sorted(TRANSFER_TOOLS)


def md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def measure_while(
    two: TwoNodes,
    protocol: str,
    action: Callable[[], None],
    *,
    all_under_way: bool = True,
    client: str = "native",
    **options: Any,
) -> tuple[MeasurementRecord, set[int]]:
    """Run a BIG-file measurement; call `action` mid-transfer; say which transfers were moving.

    With `all_under_way`, `action` waits until every destination file has data; otherwise
    until one has (on a loaded machine the K copies may not overlap), none having finished.
    """
    src, dst = (n.endpoint for n in two.nodes)
    data = two.nodes[1].data_root
    under_way: set[int] = set()

    async def scenario() -> MeasurementRecord:
        task = asyncio.create_task(
            run_measurement(
                MeasurementRequest.between(
                    src, dst, protocol, 1, client=client, transfers=3, file_size=BIG
                ),
                creds=two.creds,
                measure_latency=False,
                **options,
            )
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not task.done():
            # Bytes actually stored, not st_size: GridFTP's MODE E may write the last block
            # first, making a file look complete while it is mostly a hole.
            stored = {
                int(p.name.rsplit("-", 1)[1]): p.stat().st_blocks * 512
                for p in data.glob("tpcbench-*")
            }
            moving = {index for index, size in stored.items() if 0 < size < BIG}
            finished = any(size >= BIG for size in stored.values())
            if not finished and len(moving) >= (3 if all_under_way else 1):
                under_way.update(moving)
                action()  # these transfers are under way and none has finished
                break
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the transfers never got under way together")
        return await task

    return asyncio.run(scenario()), under_way


def written_files(destination: Path, record: MeasurementRecord) -> list[Path]:
    """The destination files of `record` that exist (GridFTP's are per slot, not per uuid)."""
    names = [destination_name(record.uuid, t.index, record.protocol) for t in record.transfers]
    return [destination / n.lstrip("/") for n in names if (destination / n.lstrip("/")).exists()]


@pytest.mark.parametrize("streams", [1, 8])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_transfers_deliver_the_exact_bytes(
    two_nodes: TwoNodes, protocol: str, streams: int
) -> None:
    record = measure(two_nodes, protocol, streams, file_size=SMALL, keep_files=True)
    assert (record.succeeded, record.failed) == (3, 0), [t.message for t in record.transfers]
    expected = md5(two_nodes.nodes[0].data_root / source_name(SMALL).lstrip("/"))
    destination = two_nodes.nodes[1].data_root
    for transfer in record.transfers:
        name = destination_name(record.uuid, transfer.index, record.protocol)
        written = destination / name.lstrip("/")
        assert md5(written) == expected
        assert transfer.bytes == SMALL and transfer.error_class is None
    assert record.throughput_gbps > 0 and record.makespan_gbps > 0
    assert record.rtt_ms is not None and record.rtt_ms > 0
    assert record.to_json()["transfers"][0]["outcome"] == "success"
    assert (
        asyncio.run(remove_destination_files(record, two_nodes.nodes[1].endpoint, two_nodes.creds))
        == []
    )
    assert not any(written_files(destination, record))
    assert leftovers(two_nodes.server_groups(), record.uuid) == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_measurement_removes_its_destination_files(two_nodes: TwoNodes, protocol: str) -> None:
    record = measure(two_nodes, protocol, 2, file_size=SMALL)
    assert record.succeeded == 3 and record.cleanup_errors == []
    assert not any(written_files(two_nodes.nodes[1].data_root, record))


@pytest.mark.parametrize("streams", [1, 8])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_missing_source_is_not_found(two_nodes: TwoNodes, protocol: str, streams: int) -> None:
    # Multi-stream HTTPS pulls fail differently (a 500 quoting the source's 404).
    record = measure(two_nodes, protocol, streams, file_size=SMALL, source_path=MISSING_SOURCE)
    assert record.failed == 3 and record.throughput_gbps == 0.0
    assert {t.error_class for t in record.transfers} == {"not-found"}, [
        t.message for t in record.transfers
    ]
    assert leftovers(two_nodes.server_groups(), record.uuid) == []


class OneMissingSource:
    """Wraps a real tool; transfer 0 asks for a source that does not exist."""

    def __init__(self, protocol: str) -> None:
        self.inner = TRANSFER_TOOLS[protocol]()
        self.name = self.inner.name
        self.auths = self.inner.auths

    async def copy(self, request: TransferRequest) -> TransferRecord:
        if request.index == 0:
            request = replace(request, src_path=MISSING_SOURCE)
        return await self.inner.copy(request)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_one_failure_does_not_stop_the_others(two_nodes: TwoNodes, protocol: str) -> None:
    record = measure(two_nodes, protocol, 1, file_size=SMALL, tool=OneMissingSource(protocol))
    outcomes = [(t.outcome, t.error_class) for t in record.transfers]
    assert outcomes == [("failure", "not-found"), ("success", None), ("success", None)]
    # Throughput counts only the two successes.
    durations = [t.duration for t in record.transfers[1:]]
    assert record.throughput_gbps == pytest.approx(2 * SMALL * 8 / (sum(durations) / 2) / 1e9)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_destination_down_is_connect(fresh_destination: TwoNodes, protocol: str) -> None:
    fresh_destination.nodes[1].stop()
    record = measure(fresh_destination, protocol, 1, file_size=SMALL, measure_latency=False)
    assert {t.error_class for t in record.transfers} == {"connect"}, [
        t.message for t in record.transfers
    ]


def service_of(protocol: str) -> str:
    return "gridftp" if protocol == "gridftp" else "xrootd"


@pytest.mark.parametrize("client", ["native", "gfal2"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_destination_killed_mid_transfer_is_killed(
    fresh_destination: TwoNodes, protocol: str, client: str
) -> None:
    destination: Node = fresh_destination.nodes[1]
    record, under_way = measure_while(
        fresh_destination,
        protocol,
        lambda: destination.signal(service_of(protocol), signal.SIGKILL),
        all_under_way=False,
        timeout=60,
        client=client,
    )
    assert record.client == client
    assert record.failed == 3 and under_way
    for transfer in record.transfers:
        # A copy that was moving lost its server; one not yet started found none to talk to.
        expected = {"killed"} if transfer.index in under_way else {"killed", "connect"}
        assert transfer.error_class in expected, (transfer.index, transfer.message)
    assert leftovers(fresh_destination.server_groups(), record.uuid) == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_stalled_destination_times_out(fresh_destination: TwoNodes, protocol: str) -> None:
    destination: Node = fresh_destination.nodes[1]
    record, _ = measure_while(
        fresh_destination,
        protocol,
        lambda: destination.signal(service_of(protocol), signal.SIGSTOP),
        all_under_way=False,  # a copy not yet started hangs on the stopped server just the same
        timeout=4,
        keep_files=True,  # the stopped server could not answer the DELETEs
    )
    assert {t.error_class for t in record.transfers} == {"timeout"}, [
        t.message for t in record.transfers
    ]
    # Ended by our timeout: not before it, and not long after it (SIGTERM grace, then SIGKILL).
    assert all(4 <= t.duration < 4 + TERMINATE_GRACE + 10 for t in record.transfers)
    assert leftovers(fresh_destination.server_groups(), record.uuid) == []


@pytest.mark.parametrize("protocol", ["https", "gridftp"])
def test_client_trusting_another_ca_is_tls(
    two_nodes: TwoNodes, tmp_path: Path, protocol: str
) -> None:
    # root:// authenticates with GSI, not TLS: a foreign CA is refused at login (test_lab_refusals).
    other = CertificateAuthority.init(tmp_path / "other-ca")
    creds = ClientCredentials(
        cert=two_nodes.creds.cert, key=two_nodes.creds.key, certdir=other.certdir
    )
    record = measure(two_nodes, protocol, 1, file_size=SMALL, creds=creds, keep_files=True)
    assert {t.error_class for t in record.transfers} == {"tls"}, [
        t.message for t in record.transfers
    ]


def test_https_push_mode_delivers_the_exact_bytes(two_nodes: TwoNodes) -> None:
    record = measure(two_nodes, "https", 1, file_size=SMALL, keep_files=True, tool=HttpsTpc("push"))
    assert record.succeeded == 3, [t.message for t in record.transfers]
    expected = md5(two_nodes.nodes[0].data_root / source_name(SMALL).lstrip("/"))
    for transfer in record.transfers:
        name = destination_name(record.uuid, transfer.index, record.protocol).lstrip("/")
        assert md5(two_nodes.nodes[1].data_root / name) == expected
    asyncio.run(remove_destination_files(record, two_nodes.nodes[1].endpoint, two_nodes.creds))

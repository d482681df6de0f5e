"""The checksum step on real XRootD servers, HTTPS-TPC and root:// (checksums.py).

A 2-node lab of its own. With `checksum="adler32"` every copy ends with the source's and the
destination's adler32 asked and compared, timed as the `checksum` phase; the digests the
servers give are the content's (checked against zlib); a source whose stored digest is not
its content's fails with `checksum-mismatch` although every byte arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.endpoints import source_name
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.servers.source_file import stored_adler32
from orchestrator.transfers import HttpsTpc, XrootdTpc
from orchestrator.transfers.root import xrdcp_environment
from tests.support.checksums import adler32_hex, server_digest, stale_digest_copy

pytestmark = pytest.mark.lab
FILE_SIZE = 4 << 20
NETWORK = LabNetwork(prefix="tpccx", subnet_offset=180)
STALE = "/tpcbench-source-stale-digest"  # a source name: hosts may read it (root:// TPC)
# (protocol, auth, tool): what the native XRootD tools can take
CASES = [
    ("https", "x509", HttpsTpc("pull")),
    ("https", "x509", HttpsTpc("push")),
    ("https", "token", HttpsTpc("pull")),
    ("root", "x509", XrootdTpc()),
]
IDS = ["https-pull-x509", "https-push-x509", "https-pull-token", "root-x509"]


@pytest.fixture(scope="module")
def lab() -> Iterator[LabInventory]:
    with temporary_lab("tpcbench-checksum-lab-", 2, FILE_SIZE, mode=NETNS, network=NETWORK) as (
        _,
        inventory,
    ):
        yield inventory


def measure(
    lab: LabInventory, protocol: str, auth: str, tool, checksum: str, **kw
) -> MeasurementRecord:
    src, dst = lab.nodes
    request = MeasurementRequest.between(
        src, dst, protocol, 2, auth=auth, checksum=checksum, transfers=2,  # type: ignore[arg-type]
        file_size=FILE_SIZE, **kw,
    )  # fmt: skip
    return asyncio.run(
        run_measurement(request, creds=lab.client, tool=tool, timeout=120, keep_files=True)
    )


@pytest.mark.parametrize(("protocol", "auth", "tool"), CASES, ids=IDS)
def test_adler32_ends_each_copy_with_a_timed_checksum_step(
    lab: LabInventory, protocol: str, auth: str, tool
) -> None:
    record = measure(lab, protocol, auth, tool, "adler32")
    assert (record.succeeded, record.failed) == (2, 0), [t.message for t in record.transfers]
    assert record.checksum == "adler32" and record.to_json()["checksum"] == "adler32"
    for transfer in record.transfers:
        phases = transfer.phases
        assert list(phases)[-1] == "checksum" and phases["checksum"] > 0, phases
        assert sum(phases.values()) == pytest.approx(transfer.duration, abs=1e-6)
    # What was compared is the content's digest: the server's answer equals zlib's (asked
    # with the orchestrator's certificate, which the token area does not let in).
    src, dst = lab.nodes
    name = destination_name(record.uuid, 0, protocol, auth)  # type: ignore[arg-type]
    written = Path(dst.data_root) / name.lstrip("/")
    if auth == "x509":
        env = xrdcp_environment(lab.client, src, dst)
        assert server_digest(dst, name, env) == adler32_hex(written)
    original = Path(src.data_root) / source_name(FILE_SIZE).lstrip("/")
    assert adler32_hex(written) == adler32_hex(original)


@pytest.mark.parametrize(("protocol", "auth", "tool"), CASES, ids=IDS)
def test_without_checksum_there_is_no_checksum_phase(
    lab: LabInventory, protocol: str, auth: str, tool
) -> None:
    record = measure(lab, protocol, auth, tool, "none")
    assert record.succeeded == 2, [t.message for t in record.transfers]
    assert all("checksum" not in t.phases for t in record.transfers)
    assert record.to_json()["checksum"] == "none"


@pytest.mark.parametrize(
    ("protocol", "tool"),
    [("https", HttpsTpc("pull")), ("root", XrootdTpc())],
    ids=["https", "root"],
)
def test_a_source_with_a_stale_stored_digest_is_a_checksum_mismatch(
    lab: LabInventory, protocol: str, tool
) -> None:
    src, dst = lab.nodes
    env = xrdcp_environment(lab.client, src, dst)
    content, stored = stale_digest_copy(src, source_name(FILE_SIZE), STALE, env)
    assert content != stored  # the server now answers a digest that is not the content's
    record = measure(lab, protocol, "x509", tool, "adler32", source_path=STALE)
    assert record.failed == 2 and record.succeeded == 0
    for transfer in record.transfers:
        assert transfer.error_class == "checksum-mismatch", transfer.message
        assert stored in transfer.message and content in transfer.message
        assert transfer.phases["checksum"] > 0
        # every byte arrived: the copy itself succeeded, the comparison failed it
        name = destination_name(record.uuid, transfer.index, protocol)
        assert adler32_hex(Path(dst.data_root) / name.lstrip("/")) == content


def test_every_nodes_source_comes_with_its_digest_stored_and_served(lab: LabInventory) -> None:
    """As at a WLCG site, the source's checksum was stored when it was written: the server
    answers it without reading the file again (source_file.py), on every node."""
    src, dst = lab.nodes
    env = xrdcp_environment(lab.client, src, dst)
    for node in lab.nodes:
        path = Path(node.data_root) / source_name(FILE_SIZE).lstrip("/")
        stored = stored_adler32(path)
        assert stored is not None and f"{stored:08x}" == adler32_hex(path)
        assert server_digest(node, source_name(FILE_SIZE), env) == f"{stored:08x}"

"""The checksum step of globus-url-copy and gfal2 on real servers (gridftp.py, gfal2.py).

A 2-node lab of its own (prefix `tpcck`, 10.99.231-232.0/24). With `checksum="adler32"`
every copy ends with the source's and the destination's adler32 asked and compared, timed
as the `checksum` phase; with "none" there is no such phase. Mismatches are made
deterministically: globus-url-copy writes to a destination that keeps nothing (/dev/null,
whose digest is the empty file's); gfal2 over https and root:// reads a source whose stored
digest is another file's (tests/support/checksums.py). gfal2 over gsiftp has no such way
(it deletes an existing destination first, and GridFTP servers compute every digest from
the bytes): its mismatch is tested on its real message (test_transfer_gfal2_checksum).
"""

from __future__ import annotations

import asyncio
import os
import stat
import uuid
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
from orchestrator.transfers import GridFtpTpc, transfer_tool, unsupported_reason
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.root import xrdcp_environment
from tests.support.checksums import adler32_hex, stale_digest_copy

pytestmark = pytest.mark.lab
FILE_SIZE = 16 << 20
NETWORK = LabNetwork(prefix="tpcck", subnet_offset=230)
STALE = "/tpcbench-source-stale-digest"  # a source name: hosts may read it (root:// TPC)
# (protocol, client): the tools this file is about
TOOLS = [("gridftp", "native"), ("https", "gfal2"), ("root", "gfal2"), ("gridftp", "gfal2")]
IDS = [f"{protocol}-{client}" for protocol, client in TOOLS]


@pytest.fixture(scope="module")
def lab() -> Iterator[LabInventory]:
    with temporary_lab("tpcbench-checksum-tools-", 2, FILE_SIZE, mode=NETNS, network=NETWORK) as (
        _,
        inventory,
    ):
        yield inventory


def measure(
    lab: LabInventory,
    protocol: str,
    client: str,
    checksum: str,
    *,
    auth: str = "x509",
    transfers: int = 2,
    source_path: str | None = None,
) -> MeasurementRecord:
    src, dst = lab.nodes
    request = MeasurementRequest.between(
        src, dst, protocol, 2, auth=auth, client=client, checksum=checksum,  # type: ignore[arg-type]
        transfers=transfers, file_size=FILE_SIZE, source_path=source_path,
    )  # fmt: skip
    return asyncio.run(
        run_measurement(
            request, creds=lab.client, timeout=120, keep_files=True, measure_latency=False
        )
    )


def written(lab: LabInventory, record: MeasurementRecord, index: int) -> Path:
    name = destination_name(record.uuid, index, record.protocol, record.auth)
    return Path(lab.nodes[1].data_root) / name.lstrip("/")


def source_digest(lab: LabInventory) -> str:
    return adler32_hex(Path(lab.nodes[0].data_root) / source_name(FILE_SIZE).lstrip("/"))


@pytest.mark.parametrize(("protocol", "client"), TOOLS, ids=IDS)
def test_adler32_ends_each_copy_with_a_timed_checksum_step(
    lab: LabInventory, protocol: str, client: str
) -> None:
    record = measure(lab, protocol, client, "adler32")
    assert (record.succeeded, record.failed) == (2, 0), [t.message for t in record.transfers]
    assert record.to_json()["checksum"] == "adler32"
    for transfer in record.transfers:
        phases = transfer.phases
        assert phases["checksum"] > 0 and all(v >= 0 for v in phases.values()), phases
        assert sum(phases.values()) == pytest.approx(transfer.duration, abs=1e-6)
        assert adler32_hex(written(lab, record, transfer.index)) == source_digest(lab)


@pytest.mark.parametrize(("protocol", "client"), TOOLS, ids=IDS)
def test_without_checksum_there_is_no_checksum_phase(
    lab: LabInventory, protocol: str, client: str
) -> None:
    record = measure(lab, protocol, client, "none")
    assert record.succeeded == 2, [t.message for t in record.transfers]
    assert all("checksum" not in t.phases for t in record.transfers)
    assert record.to_json()["checksum"] == "none"


def test_gridftp_to_a_destination_that_keeps_nothing_is_a_checksum_mismatch(
    lab: LabInventory,
) -> None:
    src, dst = lab.nodes
    # GridFTP serves the real filesystem: a name under the data root that is /dev/null
    nowhere = "/" + os.path.relpath("/dev/null", dst.data_root)
    request = TransferRequest(
        src, dst, source_name(FILE_SIZE), nowhere, 2, lab.client,
        timeout=120, size=FILE_SIZE, checksum="adler32",
    )  # fmt: skip
    transfer = asyncio.run(GridFtpTpc().copy(request))
    assert transfer.error_class == "checksum-mismatch", transfer.message
    assert "checksum verification failure" in transfer.message
    # the empty file's adler32 against the source's
    assert "got '00000001'" in transfer.message
    assert f"expected '{source_digest(lab)}'" in transfer.message
    assert transfer.phases["checksum"] > 0 and transfer.phases["streaming"] > 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # the server could only write into it


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_gfal2_reading_a_source_with_a_stale_stored_digest_is_a_checksum_mismatch(
    lab: LabInventory, protocol: str
) -> None:
    src, dst = lab.nodes
    env = xrdcp_environment(lab.client, src, dst)
    content, stored = stale_digest_copy(src, source_name(FILE_SIZE), STALE, env)
    assert content != stored  # the server now answers a digest that is not the content's
    record = measure(lab, protocol, "gfal2", "adler32", source_path=STALE)
    assert (record.succeeded, record.failed) == (0, 2)
    for transfer in record.transfers:
        assert transfer.error_class == "checksum-mismatch", transfer.message
        assert transfer.phases["checksum"] > 0
        if protocol == "https":  # gfal2 names both; XrdCl (root://) only says it
            assert f"({stored} != {content})" in transfer.message
        else:
            assert "[ERROR] CheckSum error" in transfer.message


def test_gridftp_whose_destination_may_not_be_read_back_fails_as_a_refusal(
    lab: LabInventory,
) -> None:
    # globus-url-copy writes the slot, then the server may not read it for the digest
    slot = Path(lab.nodes[1].data_root) / destination_name("-", 0, "gridftp").lstrip("/")
    slot.unlink(missing_ok=True)
    slot.touch(mode=0o200)
    owner = Path(lab.nodes[1].data_root).stat()
    os.chown(slot, owner.st_uid, owner.st_gid)
    try:
        record = measure(lab, "gridftp", "native", "adler32", transfers=1)
    finally:
        slot.unlink()
    transfer = record.transfers[0]
    assert transfer.error_class == "auth", transfer.message
    assert "Permission denied" in transfer.message and transfer.phases["checksum"] > 0


def test_gfal2_root_with_tokens_cannot_get_a_digest(lab: LabInventory) -> None:
    """XrdCl 5.5's copy job asks the digest without the URL's token: the server refuses it.
    So the combination is refused before it runs (campaigns leave it out of their plan); the
    tool driven directly still shows why (when an XRootD upgrade fixes it, this fails)."""
    why = unsupported_reason("root", "gfal2", "token", "adler32")
    assert why is not None and "XrdCl 5.5" in why
    src, dst = lab.nodes
    request = MeasurementRequest.between(
        src, dst, "root", 2, auth="token", client="gfal2", checksum="adler32", transfers=1,
        file_size=FILE_SIZE,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"XrdCl 5\.5"):
        asyncio.run(run_measurement(request, creds=lab.client, measure_latency=False))
    copy = request.transfer_request(str(uuid.uuid4()), 0, lab.client, timeout=120)
    transfer = asyncio.run(transfer_tool("root", "gfal2").copy(copy))
    assert transfer.error_class == "auth", transfer.message
    assert "Unable to checksum" in transfer.message and "eyJ" not in transfer.message

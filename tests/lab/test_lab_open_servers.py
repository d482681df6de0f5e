"""bench/authentication.py's "before" on real servers: open servers beside a lab's own
(extra_servers with open_access) copy without credentials on the server-to-server leg or a
root:// login, while the lab's own servers still refuse exactly that."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from orchestrator.endpoints import Endpoint, source_name
from orchestrator.lab.extra_servers import ExtraServer, extra_servers
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.transfers import TransferTool, transfer_tool
from tests.support.running_lab import TEST_FILE_SIZE, RunningLab

pytestmark = pytest.mark.lab
OPEN = ExtraServer(
    "open", {"https": 18443, "root": 11094, "gridftp": 12811}, (21000, 21099), open_access=True
)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def open_pair(running_lab: RunningLab) -> Iterator[tuple[Endpoint, Endpoint]]:
    """Open servers on lab-1 (with the lab's source file, hard-linked) and lab-2."""
    lab = running_lab
    if lab.inventory.mode != "netns":
        pytest.skip("open servers beside the nodes' own need a namespace per node (root)")
    with ExitStack() as stack:
        (src, src_data), (dst, _) = [
            stack.enter_context(extra_servers(lab.home, lab.inventory, name, "auth", [OPEN]))[0]
            for name in ("lab-1", "lab-2")
        ]
        source = Path(lab.inventory.node("lab-1").data_root) / source_name(TEST_FILE_SIZE)[1:]
        os.link(source, src_data / source.name)
        yield src, dst


def measure(
    lab: RunningLab, src: Endpoint, dst: Endpoint, tool: TransferTool, keep_files: bool = False
) -> MeasurementRecord:
    """One copy with 2 streams; its file is removed afterwards unless `keep_files`."""
    return asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                src, dst, tool.name, 2, transfers=1, file_size=TEST_FILE_SIZE
            ),
            creds=lab.inventory.client, tool=tool, measure_latency=False, keep_files=keep_files,
            timeout=120,
        )
    )  # fmt: skip


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_open_servers_copy_with_nobody_authenticated_between_them(
    running_lab: RunningLab, open_pair: tuple[Endpoint, Endpoint], protocol: str
) -> None:
    src, dst = open_pair
    options = {"other_leg": "anonymous"} if protocol == "https" else {}
    record = measure(running_lab, src, dst, transfer_tool(protocol, **options), keep_files=True)
    (transfer,) = record.transfers
    assert transfer.succeeded, transfer.message
    # https: no macaroon asked for (its TLS handshake stays); root://: no GSI login at all
    assert {"https": "authorize", "root": "handshake"}[protocol] not in transfer.phases
    copied = Path(dst.data_root) / transfer.destination_url.rsplit("/", 1)[1]
    assert sha256(copied) == sha256(Path(src.data_root) / source_name(TEST_FILE_SIZE)[1:])
    copied.unlink()


def test_open_means_anyone_may_write(
    running_lab: RunningLab, open_pair: tuple[Endpoint, Endpoint]
) -> None:
    _, dst = open_pair
    url = f"https://{dst.address}:{dst.ports['https']}/tpcbench-anonymous-write"
    certdir = str(running_lab.inventory.client.certdir)  # no client certificate
    result = subprocess.run(
        ["curl", "-sS", "--capath", certdir, "-o", "/dev/null", "-w", "%{http_code}", "-T", "-",
         url],
        input=b"anyone", capture_output=True, timeout=30, check=True,
    )  # fmt: skip
    assert result.stdout in (b"200", b"201")  # XRootD 5.5 answers a new file's PUT with 200
    (Path(dst.data_root) / "tpcbench-anonymous-write").unlink()


def test_the_labs_own_servers_refuse_the_anonymous_other_leg(running_lab: RunningLab) -> None:
    src, dst = running_lab.inventory.node("lab-1"), running_lab.inventory.node("lab-2")
    record = measure(running_lab, src, dst, transfer_tool("https", other_leg="anonymous"))
    (transfer,) = record.transfers
    assert not transfer.succeeded
    assert "authorize" not in transfer.phases
    secure = measure(running_lab, src, dst, transfer_tool("https"))
    assert secure.transfers[0].succeeded and "authorize" in secure.transfers[0].phases

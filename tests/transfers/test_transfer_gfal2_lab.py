"""gfal2 as the client (`gfal-copy`) for every protocol, against the real lab.

A 2-node lab of its own (prefix `tpcgf`, 10.99.146-147.0/24): the copies go from the host
to the nodes' addresses like the native tools'. Bytes are checked at the destination.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from ca.authority import CertificateAuthority
from ca.tokens import TokenMinter
from orchestrator.cli import main
from orchestrator.endpoints import ClientCredentials, in_token_area, source_name
from orchestrator.lab.inventory import LabInventory, save_inventory
from orchestrator.lab.lifecycle import start_lab, stop_lab
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.servers.xrootd import xrootd_log_file
from orchestrator.transfers import TransferTool, transfer_tool
from orchestrator.transfers.base import Auth

# a name the orchestrator may read (servers/access.py), so its absence is not an auth error
MISSING_SOURCE = "/tpcbench-source-missing"

pytestmark = pytest.mark.lab
FILE_SIZE = 8 << 20
NETWORK = LabNetwork(prefix="tpcgf", subnet_offset=145)
PROTOCOLS = ("https", "root", "gridftp")


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[Path, LabInventory]]:
    home = Path(tempfile.mkdtemp(prefix="tpcbench-gfal2-lab-", dir="/dev/shm"))
    home.chmod(0o755)  # the lab's server account must reach it
    CertificateAuthority.init(home / "ca")
    inventory = start_lab(home, 2, FILE_SIZE, mode=NETNS, network=NETWORK)
    try:
        yield home, inventory
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def written(record: MeasurementRecord, inventory: LabInventory) -> list[Path]:
    root = Path(inventory.nodes[1].data_root)
    names = [
        destination_name(record.uuid, t.index, record.protocol, record.auth)
        for t in record.transfers
    ]
    return [root / name.lstrip("/") for name in names]


def gfal2_measurement(
    inventory: LabInventory,
    protocol: str,
    *,
    client: str = "native",
    auth: Auth = "x509",
    source_path: str | None = None,
    tool: TransferTool | None = None,
) -> MeasurementRecord:
    src, dst = inventory.nodes
    request = MeasurementRequest.between(
        src, dst, protocol, 2, auth=auth, client=client, transfers=2, file_size=FILE_SIZE,
        source_path=source_path,
    )  # fmt: skip
    return asyncio.run(
        run_measurement(request, creds=inventory.client, timeout=120, keep_files=True, tool=tool)
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_gfal2_copies_the_exact_bytes(lab: tuple[Path, LabInventory], protocol: str) -> None:
    _, inventory = lab
    record = gfal2_measurement(inventory, protocol, client="gfal2")
    assert (record.succeeded, record.failed) == (2, 0), [t.message for t in record.transfers]
    assert record.client == "gfal2" and record.to_json()["client"] == "gfal2"
    expected = md5(Path(inventory.nodes[0].data_root) / source_name(FILE_SIZE).lstrip("/"))
    assert [md5(path) for path in written(record, inventory)] == [expected, expected]
    assert all(t.bytes == FILE_SIZE for t in record.transfers)
    for transfer in record.transfers:  # gfal2's time goes into phases too: setup, then the rest
        phases = transfer.to_json()["phases"]
        assert phases["request"] > 0 and all(v >= 0 for v in phases.values()), phases
        assert sum(phases.values()) == pytest.approx(transfer.duration, rel=0.05)


def test_gfal2_https_pull_is_a_real_tpc_with_our_stream_count(
    lab: tuple[Path, LabInventory],
) -> None:
    home, inventory = lab
    record = gfal2_measurement(inventory, "https", client="gfal2")
    assert record.succeeded == 2
    dst = inventory.nodes[1]
    log = xrootd_log_file(home / "lab" / "nodes" / dst.name / "xrootd.log", dst.name)
    pulls = [
        line for line in log.read_text().splitlines()
        if "event=TRANSFER_SUCCESS" in line and f"local=/tpcbench-{record.uuid}-" in line
    ]  # fmt: skip
    assert len(pulls) == 2 and all("streams=2," in line for line in pulls), pulls


def test_gfal2_https_push_copies_the_exact_bytes(lab: tuple[Path, LabInventory]) -> None:
    _, inventory = lab
    tool = transfer_tool("https", "gfal2", mode="push")
    record = gfal2_measurement(inventory, "https", tool=tool)
    assert record.succeeded == 2, [t.message for t in record.transfers]
    expected = md5(Path(inventory.nodes[0].data_root) / source_name(FILE_SIZE).lstrip("/"))
    assert {md5(path) for path in written(record, inventory)} == {expected}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_gfal2_missing_source_is_not_found(lab: tuple[Path, LabInventory], protocol: str) -> None:
    _, inventory = lab
    record = gfal2_measurement(
        inventory, protocol, client="gfal2", source_path="/tpcbench-source-missing"
    )
    assert record.failed == 2
    for transfer in record.transfers:
        assert transfer.error_class == "not-found", transfer.message
        assert transfer.message.startswith("gfal-copy error: 2 ")
        assert transfer.bytes == 0


def test_gfal2_root_to_a_closed_port_is_a_prompt_connect_failure(
    lab: tuple[Path, LabInventory],
) -> None:
    _, inventory = lab
    src, dst = inventory.nodes
    closed = replace(src, ports={**src.ports, "root": 1099})
    record = asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                closed, dst, "root", 1, client="gfal2", transfers=1, file_size=FILE_SIZE
            ),
            creds=inventory.client, timeout=120, keep_files=True, measure_latency=False,
        )
    )  # fmt: skip
    # without XRD_CONNECTIONRETRY, XrdCl would retry until our 120 s timeout ended it
    assert record.transfers[0].error_class == "connect", record.transfers[0].message


def test_measure_command_with_gfal2(
    lab: tuple[Path, LabInventory], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _, inventory = lab
    path = tmp_path / "inventory.json"
    save_inventory(inventory, path)
    argv = ["measure", "--src", "lab-1", "--dst", "lab-2", "--protocol", "gridftp"]
    argv += ["--client", "gfal2", "--transfers", "2", "--json", "--inventory", str(path)]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["protocol"], record["client"], record["succeeded"]) == ("gridftp", "gfal2", 2)
    bad = ["measure", "--src", "lab-1", "--dst", "lab-2", "--protocol", "root"]
    assert main([*bad, "--client", "gfal2", "--mode", "push", "--inventory", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--mode is for https only" in err and err.count("\n") == 1


@dataclass(frozen=True)
class ExpiredMinter(TokenMinter):
    """Mints as the lab's issuer does, but tokens that expired an hour ago."""

    def mint(self, scopes: Any, **options: Any) -> str:
        options["now"] = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
        options["lifetime"] = dt.timedelta(minutes=5)
        return super().mint(scopes, **options)


def expired_tokens(creds: ClientCredentials) -> ClientCredentials:
    assert creds.tokens is not None
    minter = creds.tokens
    return replace(creds, tokens=ExpiredMinter(minter.issuer_url, minter.key_path, minter.kid))


@pytest.mark.parametrize(
    ("protocol", "mode"), [("https", "pull"), ("https", "push"), ("root", "pull")]
)
def test_gfal2_token_copy_writes_the_exact_bytes_in_the_token_area(
    lab: tuple[Path, LabInventory], protocol: str, mode: str
) -> None:
    _, inventory = lab
    tool = transfer_tool(protocol, "gfal2", mode=mode)
    record = gfal2_measurement(inventory, protocol, tool=tool, auth="token")
    assert (record.succeeded, record.failed) == (2, 0), [t.message for t in record.transfers]
    assert record.to_json()["auth"] == "token"
    source = Path(inventory.nodes[0].data_root) / in_token_area(source_name(FILE_SIZE))[1:]
    paths = written(record, inventory)
    assert all(path.parent.name == "tokens" for path in paths)
    assert [md5(path) for path in paths] == [md5(source)] * 2
    assert all(t.bytes == FILE_SIZE and "authz=" not in t.source_url for t in record.transfers)


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_gfal2_without_a_token_cannot_enter_the_token_area(
    lab: tuple[Path, LabInventory], protocol: str
) -> None:
    # Proves the token, not the certificate, opened the area in the test above.
    _, inventory = lab
    token_source = in_token_area(source_name(FILE_SIZE))
    record = gfal2_measurement(inventory, protocol, client="gfal2", source_path=token_source)
    assert record.failed == 2
    assert {t.error_class for t in record.transfers} == {"auth"}, record.transfers[0].message


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_gfal2_expired_tokens_are_auth_failures(
    lab: tuple[Path, LabInventory], protocol: str
) -> None:
    _, inventory = lab
    creds = expired_tokens(inventory.client)
    src, dst = inventory.nodes
    record = asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                src, dst, protocol, 1, auth="token", client="gfal2", transfers=2,
                file_size=FILE_SIZE,
            ),
            creds=creds, timeout=120, measure_latency=False, keep_files=True,
        )
    )  # fmt: skip
    assert record.failed == 2 and not any(path.exists() for path in written(record, inventory))
    for transfer in record.transfers:
        assert transfer.error_class == "auth", transfer.message
        assert transfer.message.startswith("gfal-copy error: ")
        assert "eyJ" not in transfer.message  # no token in a stored record
        assert transfer.bytes == 0


def test_measure_command_with_gfal2_and_tokens(
    lab: tuple[Path, LabInventory], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    _, inventory = lab
    path = tmp_path / "inventory.json"
    save_inventory(inventory, path)
    argv = ["measure", "--src", "lab-1", "--dst", "lab-2", "--protocol", "https", "--auth"]
    argv += ["token", "--client", "gfal2", "--transfers", "2", "--json", "--inventory", str(path)]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["client"], record["auth"], record["succeeded"]) == ("gfal2", "token", 2)
    assert record["cleanup_errors"] == []  # the destinations were deleted with their tokens
    bad = ["measure", "--src", "lab-1", "--dst", "lab-2", "--protocol", "gridftp"]
    assert main([*bad, "--client", "gfal2", "--auth", "token", "--inventory", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--auth token does not work with --protocol gridftp --client gfal2" in err

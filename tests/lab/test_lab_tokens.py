"""Token-authorized HTTPS-TPC in the real lab: the lab's issuer, xrootd's SciTokens plugin, and
the https tool's per-transfer tokens; a bad token of either side is a stored `auth` failure."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from ca.tokens import TokenMinter
from orchestrator.cli import main
from orchestrator.endpoints import ClientCredentials, in_token_area, source_name
from orchestrator.lab import lab_status
from orchestrator.lab.health import client_tls_context
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import remove_destination_files, run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.transfers.https import client_ssl_context
from tests.support.running_lab import TEST_FILE_SIZE, RunningLab

pytestmark = pytest.mark.lab
TRANSFERS = 2


@dataclass(frozen=True)
class SpoilingMinter(TokenMinter):
    """Mints as the lab's issuer does, but spoils the tokens whose scope is `kind`."""

    kind: str = "storage.create"
    how: str = "expired"  # or "other-path"

    def mint(self, scopes: Sequence[str], **options: Any) -> str:
        if any(scope.startswith(self.kind + ":") for scope in scopes):
            if self.how == "expired":
                options["now"] = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
                options["lifetime"] = dt.timedelta(minutes=5)
            else:
                scopes = [f"{scope.split(':')[0]}:/tokens/someone-else" for scope in scopes]
        return super().mint(scopes, **options)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def measure(
    lab: RunningLab,
    streams: int,
    creds: ClientCredentials | None = None,
    **options: Any,
) -> MeasurementRecord:
    src, dst = lab.inventory.nodes[:2]
    return asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                src, dst, "https", streams, auth="token", transfers=TRANSFERS,
                file_size=TEST_FILE_SIZE,
            ),
            creds=creds or lab.inventory.client, timeout=120, measure_latency=False, **options,
        )
    )  # fmt: skip


def destination_files(lab: RunningLab, record: MeasurementRecord) -> list[Path]:
    dst = lab.inventory.nodes[1]
    names = [destination_name(record.uuid, t.index, "https", "token") for t in record.transfers]
    return [Path(dst.data_root) / name.lstrip("/") for name in names]


def spoiled(lab: RunningLab, **spoil: str) -> ClientCredentials:
    tokens = lab.inventory.client.tokens
    assert tokens is not None
    bad = SpoilingMinter(tokens.issuer_url, tokens.key_path, tokens.kid, **spoil)
    return replace(lab.inventory.client, tokens=bad)


def test_the_lab_serves_a_token_issuer_the_nodes_trust(running_lab: RunningLab) -> None:
    inventory = lab_status(running_lab.home)
    tokens = inventory.client.tokens
    assert tokens is not None and inventory.token_issuer["url"] == tokens.issuer_url
    assert inventory.token_issuer["health"] == "ok"
    context = client_ssl_context(inventory.client, "token")  # our CA, no client certificate
    with httpx.Client(verify=context, timeout=10) as http:
        config = http.get(tokens.issuer_url + "/.well-known/openid-configuration").json()
        keys = http.get(config["jwks_uri"]).json()["keys"]
    assert config["issuer"] == tokens.issuer_url
    assert [key["kid"] for key in keys] == [tokens.kid]
    # the issuer keeps none of the files of the process that forked it (a test run's lock)
    pid = json.loads((running_lab.home / "lab" / "run.json").read_text())["token_issuer"]["pid"]
    fds = open_files(pid)
    assert fds[1] == fds[2] == str(running_lab.home / "lab" / "issuer" / "issuer.out")
    assert all(target.startswith("socket:") for fd, target in fds.items() if fd > 2), fds


def open_files(pid: int) -> dict[int, str]:
    """What each of the process's descriptors points to; one closed while they are read (the
    issuer reads its documents per request and closes connections as it goes) is left out."""
    found = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            found[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
    return found


@pytest.mark.parametrize("streams", [1, 8])
def test_token_authorized_copy_delivers_the_exact_bytes(
    running_lab: RunningLab, streams: int
) -> None:
    record = measure(running_lab, streams, keep_files=True)
    assert (record.succeeded, record.failed) == (TRANSFERS, 0), [
        t.message for t in record.transfers
    ]
    assert record.to_json()["auth"] == "token"
    src = running_lab.inventory.nodes[0]
    expected = sha256(Path(src.data_root) / source_name(TEST_FILE_SIZE).lstrip("/"))
    written = destination_files(running_lab, record)
    assert [sha256(path) for path in written] == [expected] * TRANSFERS
    assert all(
        "/tokens/" in t.to_json().get("message", "") or t.succeeded for t in record.transfers
    )
    # the clean-up deletes with tokens of its own (the token area is closed to certificates)

    assert (
        asyncio.run(
            remove_destination_files(
                record, running_lab.inventory.nodes[1], running_lab.inventory.client
            )
        )
        == []
    )
    assert not any(path.exists() for path in written)


@pytest.mark.parametrize(
    "creds_for",
    [
        pytest.param(lambda lab: spoiled(lab, how="expired"), id="expired"),
        pytest.param(lambda lab: spoiled(lab, how="other-path"), id="another-path"),
        pytest.param(
            lambda lab: replace(
                lab.inventory.client,
                tokens=replace(lab.inventory.client.tokens, issuer_url="https://unknown.invalid"),
            ),
            id="unknown-issuer",
        ),
    ],
)
def test_a_bad_destination_token_is_an_auth_failure_with_the_servers_message(
    running_lab: RunningLab, creds_for: Any
) -> None:
    record = measure(running_lab, 1, creds_for(running_lab), keep_files=True)
    assert [t.error_class for t in record.transfers] == ["auth"] * TRANSFERS
    for transfer in record.transfers:
        assert transfer.message.startswith("COPY answered 401: Unable to create /tokens/")
        assert "permission denied" in transfer.message
    assert not any(path.exists() for path in destination_files(running_lab, record))


@pytest.mark.parametrize("streams", [1, 8])
def test_a_bad_source_token_is_an_auth_failure_and_leaves_no_file(
    running_lab: RunningLab, streams: int
) -> None:
    bad_source = spoiled(running_lab, kind="storage.read", how="expired")
    record = measure(running_lab, streams, bad_source, keep_files=True)
    assert [t.error_class for t in record.transfers] == ["auth"] * TRANSFERS
    for transfer in record.transfers:
        assert "Remote side failed with status code 403" in transfer.message
    # the pull created an empty destination before the source refused; the clean-up (its
    # own good tokens; the spoiled minter would spoil the delete's read scope too) removes it
    written = destination_files(running_lab, record)
    assert [path.stat().st_size for path in written] == [0] * TRANSFERS
    dst, creds = running_lab.inventory.nodes[1], running_lab.inventory.client
    assert asyncio.run(remove_destination_files(record, dst, creds)) == []
    assert not any(path.exists() for path in written)


def test_the_token_area_is_closed_to_certificates_and_anonymous_readers(
    running_lab: RunningLab,
) -> None:
    src = running_lab.inventory.nodes[0]
    url = f"https://{src.address}:{src.ports['https']}{in_token_area(source_name(TEST_FILE_SIZE))}"
    with httpx.Client(verify=client_tls_context(running_lab.inventory.client), timeout=10) as http:
        assert http.head(url).status_code == 403
        # outside it, x509 stays as it was
        assert http.head(url.replace("/tokens/", "/")).status_code == 200


def test_measure_cli_runs_token_authorized_transfers(
    running_lab: RunningLab, capsys: pytest.CaptureFixture[str]
) -> None:
    inventory = running_lab.home / "lab" / "inventory.json"
    argv = ["measure", "--src", "lab-1", "--dst", "lab-2", "--protocol", "https", "--auth"]
    assert main([*argv, "token", "--transfers", "1", "--json", "--inventory", str(inventory)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["auth"] == "token"
    assert [t["outcome"] for t in record["transfers"]] == ["success"]
    argv[6] = "gridftp"
    assert main([*argv, "token", "--inventory", str(inventory)]) == 2
    assert "--auth token does not work with --protocol gridftp" in capsys.readouterr().err


def test_measure_cli_refuses_an_unknown_auth(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["measure", "--src", "a", "--dst", "b", "--protocol", "https", "--auth", "kerberos"]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "argument --auth: invalid choice: 'kerberos'" in capsys.readouterr().err

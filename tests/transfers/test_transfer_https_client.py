"""HTTP-TPC request details that need no server: headers and unreadable credentials."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers import transfer_tool
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.https import HttpsTpc, tpc_headers


def test_headers_are_cased_as_xrootd_compares_them() -> None:
    assert tpc_headers("https://a:8443/s", None, 8) == {
        "Source": "https://a:8443/s",
        "X-Number-Of-Streams": "8",
        "Overwrite": "T",
    }
    # Push: XRootD ignores the stream count there, so it is not sent.
    assert tpc_headers(None, "https://b:8443/d", 8) == {
        "Destination": "https://b:8443/d",
        "Overwrite": "T",
    }


def test_unreadable_client_credentials_are_an_auth_failure(tmp_path: Path) -> None:
    creds = ClientCredentials(tmp_path / "no-cert.pem", tmp_path / "no-key.pem", tmp_path)
    node = Endpoint(name="x", address="127.0.0.1", ports={"https": 9, "root": 9, "gridftp": 9})
    record = asyncio.run(
        HttpsTpc().copy(TransferRequest(node, node, "/s", "/d", 1, creds, 10, index=4))
    )
    assert (record.index, record.outcome, record.error_class) == (4, "failure", "auth")
    assert "client credentials" in record.message


def test_an_x509_copy_asks_the_other_server_for_a_macaroon_unless_told_not_to(
    tmp_path: Path,
) -> None:
    """The anonymous other leg is bench/authentication.py's "before": no `authorize` phase."""
    ca = CertificateAuthority.init(tmp_path / "ca")
    client = ca.issue_client("tpcbench-tests")
    creds = ClientCredentials(client.cert, client.key, ca.certdir)
    nobody = Endpoint(name="x", address="127.0.0.1", ports={"https": 9, "root": 9, "gridftp": 9})
    secure = asyncio.run(HttpsTpc().copy(TransferRequest(nobody, nobody, "/s", "/d", 1, creds, 10)))
    anonymous = transfer_tool("https", other_leg="anonymous")
    assert isinstance(anonymous, HttpsTpc) and anonymous.other_leg == "anonymous"
    bare = asyncio.run(anonymous.copy(TransferRequest(nobody, nobody, "/s", "/d", 1, creds, 10)))
    # nobody listens: the macaroon's request fails first, or the COPY's own connection
    assert (secure.error_class, list(secure.phases)) == ("connect", ["authorize"])
    assert (bare.error_class, list(bare.phases)) == ("connect", ["connect"])
    with pytest.raises(ValueError, match="other_leg must be macaroon or anonymous"):
        HttpsTpc(other_leg="forwarded")  # type: ignore[arg-type]

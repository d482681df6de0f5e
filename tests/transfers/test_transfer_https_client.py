"""HTTP-TPC request details that need no server: headers and unreadable credentials."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orchestrator.endpoints import ClientCredentials, Endpoint
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
    record = asyncio.run(HttpsTpc().run(node, node, "/s", "/d", 1, creds, 10, index=4))
    assert (record.index, record.outcome, record.error_class) == (4, "failure", "auth")
    assert "client credentials" in record.message

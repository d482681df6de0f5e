"""The HTTPS tool's TLS context: built once per set of credential files, rebuilt on renewal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials
from orchestrator.transfers.https import client_ssl_context


def test_context_is_reused_until_the_certificate_is_renewed(tmp_path: Path) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca")
    issued = ca.issue_client("orchestrator", days=5)  # inside the renewal margin
    creds = ClientCredentials(cert=issued.cert, key=issued.key, certdir=ca.certdir)
    first = client_ssl_context(creds)
    assert client_ssl_context(creds) is first
    before = issued.cert.stat().st_mtime_ns
    renewed = ca.issue_client("orchestrator", days=5)
    assert renewed.reissued
    # Same paths; make sure the new files also look new on coarse-grained clocks.
    os.utime(renewed.cert, ns=(before + 1_000_000, before + 1_000_000))
    second = client_ssl_context(creds)
    assert second is not first
    assert second.verify_mode.name == "CERT_REQUIRED"


def test_missing_credentials_raise_oserror(tmp_path: Path) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca")
    creds = ClientCredentials(
        cert=tmp_path / "nope.pem", key=tmp_path / "nope.key", certdir=ca.certdir
    )
    with pytest.raises(OSError):
        client_ssl_context(creds)

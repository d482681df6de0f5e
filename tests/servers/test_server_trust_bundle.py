"""The CA bundle for xrootd's SciTokens plugin, as the chart's init container writes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.servers.trust_bundle import main


def test_the_bundle_is_the_system_one_then_our_ca(tmp_path: Path) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca")
    system = tmp_path / "system.crt"
    system.write_bytes(b"-----BEGIN CERTIFICATE-----\nsystem\n-----END CERTIFICATE-----")
    out = tmp_path / "out" / "ca-certificates.crt"
    out.parent.mkdir()
    argv = ["--ca", str(ca.cert_path), "--out", str(out), "--system-bundle", str(system)]
    assert main(argv) == 0
    assert out.read_bytes() == system.read_bytes() + b"\n" + ca.cert_path.read_bytes()
    # without a system bundle (an image without ca-certificates): our CA alone
    assert main([*argv[:4], "--system-bundle", str(tmp_path / "none")]) == 0
    assert out.read_bytes() == ca.cert_path.read_bytes()


def test_a_ca_that_never_appears_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "certificates" / "ca.crt"
    out = tmp_path / "ca-certificates.crt"
    assert main(["--ca", str(missing), "--out", str(out), "--wait", "0"]) == 1
    assert f"no CA certificate at {missing}" in capsys.readouterr().err
    assert not out.exists()

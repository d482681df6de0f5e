"""Throw-away keys for the simulated cluster: the apiserver's serving certificate (from our own
CA code) and the ServiceAccount token signing key pair."""

from __future__ import annotations

import shutil
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ca.authority import CertificateAuthority


def write_serving_credentials(*, ca_cert: Path, cert: Path, key: Path) -> None:
    """A fresh CA (next to `ca_cert`) and a certificate it signs for 127.0.0.1 / localhost."""
    authority = CertificateAuthority.init(
        ca_cert.parent / "simcluster-ca", days=7, subject="/CN=tpc-bench simcluster CA"
    )
    serving = authority.issue_host("localhost", ips=["127.0.0.1"], days=7)
    shutil.copyfile(authority.cert_path, ca_cert)
    shutil.copyfile(serving.cert, cert)
    shutil.copyfile(serving.key, key)
    key.chmod(0o600)


def write_service_account_keypair(*, private: Path, public: Path) -> None:
    """The key the apiserver signs ServiceAccount tokens with (RSA: RS256 tokens)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    private.chmod(0o600)
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )

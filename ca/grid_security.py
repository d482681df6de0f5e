"""The grid-security CA directory that Globus GSI and XRootD read (X509_CERT_DIR)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ca.names import to_globus_dn


def subject_hash(cert: x509.Certificate) -> str:
    """OpenSSL's subject hash (`openssl x509 -hash`): the name of the `<hash>.0` file."""
    # cryptography has no X509_NAME_hash; ask OpenSSL itself, whose lookups use the name.
    result = subprocess.run(
        ["openssl", "x509", "-hash", "-noout"],
        input=cert.public_bytes(serialization.Encoding.PEM),
        capture_output=True,
        check=True,
    )
    return result.stdout.decode().strip()


def signing_policy(ca_dn: str) -> str:
    """Globus signing policy: this CA signs subjects below its own base DN."""
    base = ca_dn.rsplit("/CN=", 1)[0]
    return (
        f"access_id_CA X509 '{ca_dn}'\n"
        "pos_rights globus CA:sign\n"
        f"cond_subjects globus '\"{base}/*\"'\n"
    )


def namespaces(ca_dn: str) -> str:
    """EACL namespaces file: the same constraint in the format newer Globus prefers."""
    base = ca_dn.rsplit("/CN=", 1)[0]
    return f'TO Issuer "{ca_dn}" \\\n  PERMIT Subject "{base}/.*"\n'


def grid_security_files(
    ca_cert: x509.Certificate, crl: x509.CertificateRevocationList
) -> dict[str, bytes]:
    """File name -> content: `<hash>.0`, `.signing_policy`, `.namespaces` and `.r0`."""
    digest = subject_hash(ca_cert)
    ca_dn = to_globus_dn(ca_cert.subject)
    return {
        f"{digest}.0": ca_cert.public_bytes(serialization.Encoding.PEM),
        f"{digest}.signing_policy": signing_policy(ca_dn).encode(),
        f"{digest}.namespaces": namespaces(ca_dn).encode(),
        f"{digest}.r0": crl.public_bytes(serialization.Encoding.PEM),
    }


def write_grid_security_files(
    certdir: Path, ca_cert: x509.Certificate, crl: x509.CertificateRevocationList
) -> str:
    """Write the grid-security files into `certdir`; return the CA's hash."""
    certdir.mkdir(parents=True, exist_ok=True)
    os.chmod(certdir, 0o755)
    files = grid_security_files(ca_cert, crl)
    for name, data in files.items():
        path = certdir / name
        tmp = certdir / f".{name}.tmp"
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return next(iter(files)).removesuffix(".0")

"""RFC 3820 proxy certificates, as voms-proxy-init makes them (without the VOMS attributes,
which nothing of ours reads): the credential a grid user, and the DOMA smoke test, presents.

A proxy file holds the proxy certificate, its key and the end-entity certificate it was
signed with, in that order: curl's `-E FILE` and Globus' X509_USER_PROXY read it so.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from ca.keys import key_pem, new_key
from ca.tokens import PROXY_CERT_INFO

# ProxyCertInfo ::= SEQUENCE { ProxyPolicy ::= SEQUENCE { policyLanguage id-ppl-inheritAll } }
# (RFC 3820 3.8; id-ppl-inheritAll is 1.3.6.1.5.5.7.21.1), DER-encoded by hand: cryptography
# has no class for this extension.
_INHERIT_ALL = bytes([0x06, 0x08, 0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x15, 0x01])
_PROXY_POLICY = bytes([0x30, len(_INHERIT_ALL)]) + _INHERIT_ALL
PROXY_CERT_INFO_DER = bytes([0x30, len(_PROXY_POLICY)]) + _PROXY_POLICY
PROXY_KEY_USAGE = x509.KeyUsage(
    digital_signature=True, content_commitment=False, key_encipherment=True,
    data_encipherment=False, key_agreement=False, key_cert_sign=False, crl_sign=False,
    encipher_only=False, decipher_only=False,
)  # fmt: skip


def make_proxy(
    cert_path: Path, key_path: Path, out: Path, lifetime: dt.timedelta = dt.timedelta(hours=12)
) -> Path:
    """A first-level proxy of the certificate `cert_path` (signed with `key_path`) in `out`
    (0600): subject the certificate's plus `CN=<serial>`, issuer the certificate's subject."""
    eec = x509.load_pem_x509_certificate(cert_path.read_bytes())
    eec_key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    assert isinstance(eec_key, rsa.RSAPrivateKey)
    key = new_key()
    serial = x509.random_serial_number() >> 128  # a short number, as voms-proxy-init's
    subject = x509.Name(
        [*eec.subject.rdns, x509.RelativeDistinguishedName(
            [x509.NameAttribute(NameOID.COMMON_NAME, str(serial))]
        )]
    )  # fmt: skip
    now = dt.datetime.now(dt.UTC)
    proxy = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(eec.subject)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(min(now + lifetime, eec.not_valid_after_utc))
        .add_extension(PROXY_KEY_USAGE, critical=True)
        .add_extension(
            x509.UnrecognizedExtension(PROXY_CERT_INFO, PROXY_CERT_INFO_DER), critical=True
        )
        .sign(eec_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    data = proxy.public_bytes(pem) + key_pem(key) + eec.public_bytes(pem)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return out

"""Our certificate authority: a CA, host and client certificates, and the grid-security layout.

The layout of a CA directory:

    DIR/ca/ca-cert.pem, DIR/ca/ca-key.pem (0600)
    DIR/certificates/<hash>.0 .signing_policy .namespaces .r0   (X509_CERT_DIR for Globus/XRootD)
    DIR/hosts/<name>/hostcert.pem, hostkey.pem (0600)
    DIR/clients/<name>/usercert.pem, userkey.pem (0600)
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ca.grid_security import write_grid_security_files
from ca.keys import key_pem, new_key, write_private, write_public
from ca.names import parse_globus_dn, to_globus_dn

DEFAULT_CA_SUBJECT = "/DC=org/DC=tpc-bench/CN=tpc-bench CA"
DEFAULT_CA_DAYS = 3650
DEFAULT_CERT_DAYS = 365
# Re-issue a host or client certificate when less than this much validity is left.
RENEW_BEFORE = dt.timedelta(days=30)
HOST_USAGES = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
CLIENT_USAGES = [ExtendedKeyUsageOID.CLIENT_AUTH]


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """A CA signs certificates and CRLs; a host or client signs and enciphers (TLS)."""
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=False,
        key_encipherment=not ca,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


class CAError(Exception):
    """A CA directory that is missing, incomplete or unusable."""


@dataclass(frozen=True)
class IssuedCredential:
    """A certificate and its private key on disk, with the subject in Globus' slash form."""

    cert: Path
    key: Path
    subject_dn: str
    reissued: bool = False


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CertificateAuthority:
    """A CA kept in a directory; use `init` to create (or keep) one and `load` to open one."""

    def __init__(self, directory: Path, cert: x509.Certificate, key: rsa.RSAPrivateKey) -> None:
        self.directory = directory
        self.certificate = cert
        self._key = key

    # -- paths ---------------------------------------------------------------------------
    @property
    def cert_path(self) -> Path:
        return self.directory / "ca" / "ca-cert.pem"

    @property
    def key_path(self) -> Path:
        return self.directory / "ca" / "ca-key.pem"

    @property
    def certdir(self) -> Path:
        return self.directory / "certificates"

    @property
    def subject_dn(self) -> str:
        return to_globus_dn(self.certificate.subject)

    # -- creation and loading --------------------------------------------------------------
    @classmethod
    def init(
        cls,
        directory: Path,
        *,
        days: int = DEFAULT_CA_DAYS,
        subject: str | None = None,
    ) -> CertificateAuthority:
        """Create a CA in `directory`, or keep the one already there (never replaced silently)."""
        directory = Path(directory)
        if (directory / "ca" / "ca-cert.pem").exists() or (
            directory / "ca" / "ca-key.pem"
        ).exists():
            existing = cls.load(directory)
            if subject is not None and parse_globus_dn(subject) != existing.certificate.subject:
                raise CAError(
                    f"a different CA already exists in {directory} ({existing.subject_dn}); "
                    "choose another --dir or remove it yourself"
                )
            existing.write_grid_security()  # repairs a damaged certificates/ directory
            return existing
        if days <= 0:
            raise CAError("--days must be a positive number of days")
        name = parse_globus_dn(subject or DEFAULT_CA_SUBJECT)
        key = new_key()
        now = _now()
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_key_usage(ca=True), critical=True)
            .add_extension(ski, critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
            )
            .sign(key, hashes.SHA256())
        )
        ca = cls(directory, cert, key)
        write_private(ca.key_path, key_pem(key))
        write_public(ca.cert_path, cert.public_bytes(serialization.Encoding.PEM))
        ca.write_grid_security()
        return ca

    @classmethod
    def load(cls, directory: Path) -> CertificateAuthority:
        directory = Path(directory)
        cert_path = directory / "ca" / "ca-cert.pem"
        key_path = directory / "ca" / "ca-key.pem"
        if not cert_path.exists() and not key_path.exists():
            raise CAError(
                f"no CA in {directory}; create one with: tpcbench ca init --dir {directory}"
            )
        if not cert_path.exists() or not key_path.exists():
            missing = cert_path if not cert_path.exists() else key_path
            raise CAError(f"the CA in {directory} is incomplete: {missing} is missing")
        try:
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        except ValueError as exc:
            raise CAError(f"the CA in {directory} cannot be read: {exc}") from exc
        if not isinstance(key, rsa.RSAPrivateKey) or key.public_key() != cert.public_key():
            raise CAError(f"the CA key in {key_path} does not match {cert_path}")
        return cls(directory, cert, key)

    def write_grid_security(self) -> None:
        """(Re)write certificates/: hash links, signing policy, namespaces and an empty CRL."""
        write_grid_security_files(self.certdir, self.certificate, self.empty_crl())

    def empty_crl(self, days: int = DEFAULT_CA_DAYS) -> x509.CertificateRevocationList:
        now = _now()
        ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        return (
            x509.CertificateRevocationListBuilder()
            .issuer_name(self.certificate.subject)
            .last_update(now - dt.timedelta(minutes=5))
            .next_update(min(now + dt.timedelta(days=days), self.certificate.not_valid_after_utc))
            .add_extension(x509.CRLNumber(1), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski.value),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )

    # -- issuing -------------------------------------------------------------------------
    def issue_host(
        self,
        name: str,
        *,
        ips: Sequence[str] = (),
        dns: Sequence[str] = (),
        days: int = DEFAULT_CERT_DAYS,
    ) -> IssuedCredential:
        """A host certificate (CN = name, SAN = DNS names and IPs), kept if still good."""
        subject, san = self._host_names(name, ips, dns)
        folder = self.directory / "hosts" / name
        return self._issue(
            folder / "hostcert.pem",
            folder / "hostkey.pem",
            subject=subject,
            san=san,
            usages=HOST_USAGES,
            days=days,
        )

    def issue_client(self, name: str, *, days: int = DEFAULT_CERT_DAYS) -> IssuedCredential:
        """The client certificate the orchestrator presents to drive transfers."""
        _check_name(name)
        folder = self.directory / "clients" / name
        return self._issue(
            folder / "usercert.pem",
            folder / "userkey.pem",
            subject=self._subject("People", name),
            san=None,
            usages=CLIENT_USAGES,
            days=days,
        )

    # -- signing keys made elsewhere (the cluster's CSR signer) ---------------------------
    def sign_host_key(
        self,
        public_key: rsa.RSAPublicKey,
        name: str,
        *,
        ips: Sequence[str] = (),
        dns: Sequence[str] = (),
        days: int = DEFAULT_CERT_DAYS,
    ) -> x509.Certificate:
        """A host certificate, as `issue_host` makes, for a key whose owner keeps it."""
        subject, san = self._host_names(name, ips, dns)
        return self._certificate(public_key, subject, san, HOST_USAGES, _positive(days))

    def sign_client_key(
        self, public_key: rsa.RSAPublicKey, name: str, *, days: int = DEFAULT_CERT_DAYS
    ) -> x509.Certificate:
        """A client certificate, as `issue_client` makes, for a key whose owner keeps it."""
        _check_name(name)
        subject = self._subject("People", name)
        return self._certificate(public_key, subject, None, CLIENT_USAGES, _positive(days))

    def host_subject_dn(self, name: str) -> str:
        """The Globus-form DN this CA gives the host `name` (GridFTP's expected subject)."""
        return to_globus_dn(self._subject("Services", name))

    def client_subject_dn(self, name: str) -> str:
        """The Globus-form DN this CA gives the client `name` (a grid-mapfile line's DN)."""
        return to_globus_dn(self._subject("People", name))

    def _host_names(
        self, name: str, ips: Sequence[str], dns: Sequence[str]
    ) -> tuple[x509.Name, x509.SubjectAlternativeName]:
        _check_name(name)
        addresses = [_parse_ip(ip) for ip in ips]
        dns_names = list(dict.fromkeys([name, *dns]))
        san = x509.SubjectAlternativeName(
            [x509.DNSName(n) for n in dns_names] + [x509.IPAddress(a) for a in addresses]
        )
        return self._subject("Services", name), san

    def _subject(self, unit: str, common_name: str) -> x509.Name:
        """Our DN below the CA's: the CA's attributes without its CN, then OU and CN."""
        base = [a for a in self.certificate.subject if a.oid != NameOID.COMMON_NAME]
        return x509.Name(
            [
                *[x509.RelativeDistinguishedName([a]) for a in base],
                x509.RelativeDistinguishedName(
                    [x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, unit)]
                ),
                x509.RelativeDistinguishedName(
                    [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
                ),
            ]
        )

    def _issue(
        self,
        cert_path: Path,
        key_path: Path,
        *,
        subject: x509.Name,
        san: x509.SubjectAlternativeName | None,
        usages: list[x509.ObjectIdentifier],
        days: int,
    ) -> IssuedCredential:
        _positive(days)
        if self._still_good(cert_path, key_path, subject, san):
            return IssuedCredential(cert_path, key_path, to_globus_dn(subject))
        key = new_key()
        cert = self._certificate(key.public_key(), subject, san, usages, days)
        write_private(key_path, key_pem(key))
        write_public(cert_path, cert.public_bytes(serialization.Encoding.PEM))
        return IssuedCredential(cert_path, key_path, to_globus_dn(subject), reissued=True)

    def _certificate(
        self,
        public_key: rsa.RSAPublicKey,
        subject: x509.Name,
        san: x509.SubjectAlternativeName | None,
        usages: list[x509.ObjectIdentifier],
        days: int,
    ) -> x509.Certificate:
        """The one certificate-builder path: end-entity certificates signed by this CA."""
        now = _now()
        not_after = min(now + dt.timedelta(days=days), self.certificate.not_valid_after_utc)
        ca_ski = self.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.certificate.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski.value),
                critical=False,
            )
        )
        if san is not None:
            builder = builder.add_extension(san, critical=False)
        return builder.sign(self._key, hashes.SHA256())

    def _still_good(
        self,
        cert_path: Path,
        key_path: Path,
        subject: x509.Name,
        san: x509.SubjectAlternativeName | None,
    ) -> bool:
        """True when the certificate on disk is ours, matches the request and is not expiring."""
        if not cert_path.exists() or not key_path.exists():
            return False
        try:
            cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
            key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        except ValueError:
            return False
        if cert.issuer != self.certificate.subject or cert.subject != subject:
            return False
        if key.public_key() != cert.public_key():
            return False
        try:
            cert.verify_directly_issued_by(self.certificate)
        except (ValueError, TypeError, x509.InvalidSignature):
            return False
        if cert.not_valid_after_utc - _now() < RENEW_BEFORE:
            return False
        try:
            current = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            current = None
        return _san_set(current) == _san_set(san)


def _san_set(san: x509.SubjectAlternativeName | None) -> set[str]:
    return set() if san is None else {f"{type(n).__name__}:{n.value}" for n in san}


def _positive(days: int) -> int:
    if days <= 0:
        raise CAError("--days must be a positive number of days")
    return days


def _check_name(name: str) -> None:
    if not name or any(c in name for c in "/\\ \n\t") or name in {".", ".."}:
        raise CAError(f"invalid name {name!r}: use a host name such as node1.example.org")


def _parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError as exc:
        raise CAError(f"invalid IP address {value!r}") from exc

"""Distinguished names in the slash form that Globus, grid-mapfiles and signing policies use."""

from __future__ import annotations

from cryptography import x509
from cryptography.x509.oid import NameOID

_SHORT_NAMES: dict[str, x509.ObjectIdentifier] = {
    "DC": NameOID.DOMAIN_COMPONENT,
    "C": NameOID.COUNTRY_NAME,
    "ST": NameOID.STATE_OR_PROVINCE_NAME,
    "L": NameOID.LOCALITY_NAME,
    "O": NameOID.ORGANIZATION_NAME,
    "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
    "CN": NameOID.COMMON_NAME,
    "emailAddress": NameOID.EMAIL_ADDRESS,
}
_OID_SHORT = {oid: short for short, oid in _SHORT_NAMES.items()}


class DNError(ValueError):
    """A subject that cannot be parsed."""


def parse_globus_dn(dn: str) -> x509.Name:
    """`/DC=org/DC=tpc-bench/CN=tpc-bench CA` -> an x509.Name in that order."""
    if not dn.startswith("/") or len(dn) < 4:
        raise DNError(f"invalid subject {dn!r}: expected the form /DC=org/DC=example/CN=Example CA")
    rdns = []
    for part in dn[1:].split("/"):
        key, sep, value = part.partition("=")
        if not sep or not value:
            raise DNError(f"invalid subject component {part!r} in {dn!r}")
        if key not in _SHORT_NAMES:
            known = ", ".join(_SHORT_NAMES)
            raise DNError(f"unknown attribute {key!r} in {dn!r}; use one of {known}")
        try:
            attribute = x509.NameAttribute(_SHORT_NAMES[key], value)
        except ValueError as exc:
            raise DNError(f"invalid value for {key} in {dn!r}: {exc}") from exc
        rdns.append(x509.RelativeDistinguishedName([attribute]))
    if not any(a.oid == NameOID.COMMON_NAME for rdn in rdns for a in rdn):
        raise DNError(f"subject {dn!r} has no CN")
    return x509.Name(rdns)


def to_globus_dn(name: x509.Name) -> str:
    """An x509.Name in Globus' slash form, in encoded order."""
    parts = []
    for rdn in name.rdns:
        for attribute in rdn:
            short = _OID_SHORT.get(attribute.oid, attribute.oid.dotted_string)
            parts.append(f"{short}={attribute.value}")
    return "/" + "/".join(parts)

"""Our token issuer: a signing key kept beside the CA, its JWKS, and the tokens it mints.

Tokens follow the WLCG token profile (JWT, RS256): `iss`, `sub`, `aud`, `scope` (e.g.
`storage.read:/path storage.create:/path`), `wlcg.ver` "1.0", `iat`, `nbf`, `exp`, `jti`.
Servers (xrootd's SciTokens plugin) fetch the public keys from the issuer's
`/.well-known/openid-configuration` -> `jwks_uri` and check signature, issuer, audience,
lifetime and the scope's path. An issuer that holds the signing key (the lab's) also names a
`token_endpoint` there (OAuth client credentials, the client authenticated by its TLS
certificate: orchestrator/token_issuer.py decides who gets which scopes).

The layout, inside a CA directory:

    DIR/tokens/issuer-key.pem (0600)    the signing key (RSA, made like the CA's keys)
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ca.keys import key_pem, new_key, write_private
from ca.names import to_globus_dn

ALGORITHM = "RS256"
# The WLCG profile's audience meaning "any service"; servers also accept their own URL.
ANY_AUDIENCE = "https://wlcg.cern.ch/jwt/v1/any"
WLCG_VERSION = "1.0"
DEFAULT_LIFETIME = dt.timedelta(minutes=20)
MAX_LIFETIME = dt.timedelta(hours=6)  # the profile's advice for access tokens
JWKS_PATH = "/jwks"
OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration"
TOKEN_PATH = "/token"  # the token endpoint, where an issuer that holds its key serves one
CLIENT_CREDENTIALS = "client_credentials"  # the one OAuth grant the token endpoint knows
# RFC 8705: the client authenticates with its TLS client certificate (issued by our CA)
TLS_CLIENT_AUTH = "tls_client_auth"
# The WLCG profile's storage scopes a token of ours may carry, each `<activity>:<path>`.
READ, CREATE, MODIFY = "storage.read", "storage.create", "storage.modify"
STORAGE_ACTIVITIES = (READ, CREATE, MODIFY)
# RFC 3820's proxyCertInfo extension: a proxy certificate, in its issuer's name
PROXY_CERT_INFO = x509.ObjectIdentifier("1.3.6.1.5.5.7.1.14")
_HTTPS_ORIGIN = re.compile(r"https://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?")


class TokenError(Exception):
    """A token issuer key that is missing or unusable, or a token that cannot be minted."""


def token_dir(ca_directory: Path) -> Path:
    return Path(ca_directory) / "tokens"


def issuer_key_path(ca_directory: Path) -> Path:
    return token_dir(ca_directory) / "issuer-key.pem"


def ensure_issuer_key(ca_directory: Path) -> Path:
    """The issuer's signing key in the CA directory, made once and kept (like the CA's)."""
    path = issuer_key_path(ca_directory)
    if not path.exists():
        write_private(path, key_pem(new_key()))
    load_private_key(path)  # a damaged key is reported here, not at the first transfer
    return path


def load_private_key(path: Path) -> rsa.RSAPrivateKey:
    """The issuer's key; parsed once per version of the file (loading an RSA key costs tens
    of milliseconds, which K transfers starting at once would otherwise pay K times)."""
    try:
        stamp = Path(path).stat().st_mtime_ns
    except FileNotFoundError:
        raise TokenError(f"the token issuer key {path} does not exist") from None
    return _parsed_key(Path(path), stamp)


@functools.lru_cache(maxsize=4)
def _parsed_key(path: Path, stamp: int) -> rsa.RSAPrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise TokenError(f"the token issuer key {path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise TokenError(f"the token issuer key {path} cannot be read: {exc}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TokenError(f"the token issuer key {path} is not an RSA key")
    return key


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def public_jwk(public_key: rsa.RSAPublicKey) -> dict[str, str]:
    """The key as a JWK, its `kid` the RFC 7638 thumbprint (a new key gets a new kid)."""
    numbers = public_key.public_numbers()
    members = {"e": _b64(numbers.e), "kty": "RSA", "n": _b64(numbers.n)}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True).encode()
    kid = base64.urlsafe_b64encode(hashlib.sha256(canonical).digest()).rstrip(b"=").decode()
    return {**members, "kid": kid, "alg": ALGORITHM, "use": "sig"}


def jwks(key_path: Path) -> dict[str, Any]:
    """The JWKS document the issuer serves: its one public key."""
    return {"keys": [public_jwk(load_private_key(key_path).public_key())]}


def openid_configuration(issuer_url: str, *, token_endpoint: bool = False) -> dict[str, Any]:
    """The discovery document: where the keys are (all a token verifier needs) and, for an
    issuer that holds its signing key (`token_endpoint`), where a client asks for a token:
    the client credentials grant, the client authenticated by its TLS certificate."""
    base = issuer_url.rstrip("/")
    document: dict[str, Any] = {
        "issuer": issuer_url,
        "jwks_uri": base + JWKS_PATH,
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "scopes_supported": [f"{activity}:/" for activity in STORAGE_ACTIVITIES],
    }
    if token_endpoint:
        document["token_endpoint"] = base + TOKEN_PATH
        document["grant_types_supported"] = [CLIENT_CREDENTIALS]
        document["token_endpoint_auth_methods_supported"] = [TLS_CLIENT_AUTH]
    return document


def parse_storage_scope(scope: str) -> tuple[str, str]:
    """`storage.read:/a/b/` -> ("storage.read", "/a/b"): a WLCG storage scope with an absolute
    path, which opens that path and everything below it. Raises TokenError for another kind of
    scope, a missing path (the profile reads it as `/`), or a path with `.`, `..` or `//`."""
    activity, sep, path = scope.partition(":")
    if activity not in STORAGE_ACTIVITIES:
        known = ", ".join(STORAGE_ACTIVITIES)
        raise TokenError(f"{scope!r} is not a storage scope of ours ({known}, each :/path)")
    if not sep or not path.startswith("/"):
        raise TokenError(f"{scope!r} names no absolute path (write {activity}:/path)")
    trimmed = path.rstrip("/") or "/"
    parts = trimmed.split("/")[1:]
    if trimmed != "/" and any(part in ("", ".", "..") for part in parts):
        raise TokenError(f"{scope!r}: a scope's path may not contain '.', '..' or '//'")
    if not trimmed.isprintable():
        raise TokenError(f"{scope!r}: a scope's path must be printable")
    return activity, trimmed


def token_audience(requested: str | None) -> str:
    """A token's `aud` as a client asks for it: the WLCG "any" audience our servers accept
    (also when none is asked for), or one server's https origin (https://host:port), which
    that server accepts as its own (xrootd's `token_audience`). TokenError for anything else."""
    if not requested:
        return ANY_AUDIENCE
    if requested == ANY_AUDIENCE or _HTTPS_ORIGIN.fullmatch(requested):
        return requested
    raise TokenError(f"audience {requested!r} is neither {ANY_AUDIENCE} nor https://host:port")


def client_identity(certificate: bytes | None) -> str | None:
    """The DN (slash form) of a TLS client whose chain was verified (`certificate`: its leaf,
    DER): the certificate's subject, or for an RFC 3820 proxy (which the TLS library verified
    as one, its subject its issuer's plus a CN) the issuer's: the end-entity certificate a
    first-level proxy was made from, as voms-proxy-init makes them. None: no certificate."""
    if not certificate:
        return None
    leaf = x509.load_der_x509_certificate(certificate)
    try:
        leaf.extensions.get_extension_for_oid(PROXY_CERT_INFO)
    except x509.ExtensionNotFound:
        return to_globus_dn(leaf.subject)
    return to_globus_dn(leaf.issuer)


@dataclass(frozen=True)
class TokenMinter:
    """Mints tokens of one issuer; frozen and hashable, so it travels inside credentials."""

    issuer_url: str
    key_path: Path
    kid: str

    @classmethod
    def for_key(cls, issuer_url: str, key_path: Path) -> TokenMinter:
        kid = public_jwk(load_private_key(key_path).public_key())["kid"]
        return cls(issuer_url=issuer_url, key_path=Path(key_path), kid=kid)

    def mint(
        self,
        scopes: Sequence[str],
        *,
        audience: str = ANY_AUDIENCE,
        lifetime: dt.timedelta = DEFAULT_LIFETIME,
        subject: str = "tpc-bench",
        now: dt.datetime | None = None,
    ) -> str:
        """A signed token granting `scopes` (e.g. `storage.read:/file`) for `lifetime`.

        `now` may lie in the past to make an already expired token (the tests do).
        """
        if not scopes:
            raise TokenError("a token needs at least one scope")
        if lifetime > MAX_LIFETIME:
            raise TokenError(f"a token lifetime of {lifetime} is longer than {MAX_LIFETIME}")
        issued = int((now or dt.datetime.now(dt.UTC)).timestamp())
        claims = {
            "iss": self.issuer_url,
            "sub": subject,
            "aud": audience,
            "scope": " ".join(scopes),
            "wlcg.ver": WLCG_VERSION,
            "iat": issued,
            "nbf": issued,
            "exp": issued + int(lifetime.total_seconds()),
            "jti": str(uuid.uuid4()),
        }
        import jwt  # here: the server images, which only read ANY_AUDIENCE, carry no JWT library

        key = load_private_key(self.key_path)
        return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": self.kid})

    def to_json(self) -> dict[str, str]:
        return {"issuer_url": self.issuer_url, "key_path": str(self.key_path), "kid": self.kid}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> TokenMinter:
        return cls(issuer_url=data["issuer_url"], key_path=Path(data["key_path"]), kid=data["kid"])

"""Our token issuer: a signing key kept beside the CA, its JWKS, and the tokens it mints.

Tokens follow the WLCG token profile (JWT, RS256): `iss`, `sub`, `aud`, `scope` (e.g.
`storage.read:/path storage.create:/path`), `wlcg.ver` "1.0", `iat`, `nbf`, `exp`, `jti`.
Servers (xrootd's SciTokens plugin) fetch the public keys from the issuer's
`/.well-known/openid-configuration` -> `jwks_uri` and check signature, issuer, audience,
lifetime and the scope's path.

The layout, inside a CA directory:

    DIR/tokens/issuer-key.pem (0600)    the signing key (RSA, made like the CA's keys)
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ca.keys import key_pem, new_key, write_private

ALGORITHM = "RS256"
# The WLCG profile's audience meaning "any service"; servers also accept their own URL.
ANY_AUDIENCE = "https://wlcg.cern.ch/jwt/v1/any"
WLCG_VERSION = "1.0"
DEFAULT_LIFETIME = dt.timedelta(minutes=20)
MAX_LIFETIME = dt.timedelta(hours=6)  # the profile's advice for access tokens
JWKS_PATH = "/jwks"
OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration"


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


def openid_configuration(issuer_url: str) -> dict[str, Any]:
    """The discovery document: where the keys are (all a token verifier needs)."""
    return {
        "issuer": issuer_url,
        "jwks_uri": issuer_url.rstrip("/") + JWKS_PATH,
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "scopes_supported": ["storage.read:/", "storage.create:/", "storage.modify:/"],
    }


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

"""Our token issuer's key, JWKS and tokens, checked with an independent JWT verifier."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import jwt
import pytest

from ca.tokens import (
    ANY_AUDIENCE,
    MAX_LIFETIME,
    TokenError,
    TokenMinter,
    ensure_issuer_key,
    jwks,
    openid_configuration,
)
from orchestrator.endpoints import ClientCredentials

ISSUER = "https://10.99.0.1:8444"


def verify(token: str, key_path: Path, audience: str = ANY_AUDIENCE) -> dict:
    """Decode as a server would: the signature by the published JWKS key, then the claims."""
    published = jwt.PyJWKSet.from_dict(jwks(key_path))
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(k for k in published.keys if k.key_id == kid)
    return jwt.decode(token, key.key, algorithms=["RS256"], audience=audience, issuer=ISSUER)


def test_the_issuer_key_is_made_once_private_and_kept(tmp_path: Path) -> None:
    path = ensure_issuer_key(tmp_path)
    assert path == tmp_path / "tokens" / "issuer-key.pem"
    assert os.stat(path).st_mode & 0o777 == 0o600
    before = path.read_bytes()
    assert ensure_issuer_key(tmp_path).read_bytes() == before


def test_a_damaged_issuer_key_is_named(tmp_path: Path) -> None:
    path = ensure_issuer_key(tmp_path)
    path.write_text("not a key")
    with pytest.raises(TokenError, match="cannot be read"):
        ensure_issuer_key(tmp_path)


def test_jwks_and_discovery_document_name_one_rs256_key(tmp_path: Path) -> None:
    document = jwks(ensure_issuer_key(tmp_path))
    (key,) = document["keys"]
    assert (key["kty"], key["alg"], key["use"]) == ("RSA", "RS256", "sig")
    assert len(key["kid"]) == 43  # a base64url SHA-256 thumbprint
    assert "d" not in key  # never the private part
    config = openid_configuration(ISSUER)
    assert config["issuer"] == ISSUER
    assert config["jwks_uri"] == ISSUER + "/jwks"


def test_a_minted_token_follows_the_wlcg_profile(tmp_path: Path) -> None:
    minter = TokenMinter.for_key(ISSUER, ensure_issuer_key(tmp_path))
    token = minter.mint(
        ["storage.read:/tokens/a", "storage.create:/tokens/b"],
        audience="https://10.99.1.2:8443",
        lifetime=dt.timedelta(minutes=11),
        subject="tester",
    )
    claims = verify(token, minter.key_path, audience="https://10.99.1.2:8443")
    assert claims["scope"] == "storage.read:/tokens/a storage.create:/tokens/b"
    assert claims["wlcg.ver"] == "1.0"
    assert (claims["iss"], claims["sub"]) == (ISSUER, "tester")
    assert claims["exp"] - claims["iat"] == 11 * 60
    assert claims["nbf"] == claims["iat"]
    assert jwt.get_unverified_header(token)["kid"] == minter.kid
    other = verify(minter.mint(["storage.read:/x"]), minter.key_path)
    assert other["jti"] != claims["jti"] and other["aud"] == ANY_AUDIENCE


def test_a_token_minted_in_the_past_is_expired(tmp_path: Path) -> None:
    minter = TokenMinter.for_key(ISSUER, ensure_issuer_key(tmp_path))
    past = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
    with pytest.raises(jwt.ExpiredSignatureError):
        verify(minter.mint(["storage.read:/x"], now=past), minter.key_path)


def test_minting_refuses_no_scope_and_long_lives(tmp_path: Path) -> None:
    minter = TokenMinter.for_key(ISSUER, ensure_issuer_key(tmp_path))
    with pytest.raises(TokenError, match="at least one scope"):
        minter.mint([])
    with pytest.raises(TokenError, match="longer than"):
        minter.mint(["storage.read:/x"], lifetime=MAX_LIFETIME + dt.timedelta(seconds=1))
    gone = TokenMinter(ISSUER, tmp_path / "missing.pem", minter.kid)
    with pytest.raises(TokenError, match="does not exist"):
        gone.mint(["storage.read:/x"])


def test_credentials_carry_the_minter_through_json(tmp_path: Path) -> None:
    minter = TokenMinter.for_key(ISSUER, ensure_issuer_key(tmp_path))
    creds = ClientCredentials(Path("c.pem"), Path("k.pem"), Path("ca"), tokens=minter)
    data = json.loads(json.dumps(creds.to_json()))
    assert data["tokens"] == {
        "issuer_url": ISSUER,
        "key_path": str(minter.key_path),
        "kid": minter.kid,
    }
    assert ClientCredentials.from_json(data) == creds
    assert hash(creds) == hash(ClientCredentials.from_json(data))  # a cache key (ssl context)
    plain = ClientCredentials(Path("c.pem"), Path("k.pem"), Path("ca"))
    assert "tokens" not in plain.to_json()
    assert ClientCredentials.from_json(plain.to_json()).tokens is None

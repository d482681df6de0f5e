"""The token issuer's token endpoint: who gets a token (the orchestrator's certificate, or a
proxy of it, and no one else), which scopes (within the orchestrator's rights), and the OAuth
answers, over real TLS on 127.0.0.1 (the lab's issuer on real servers:
tests/lab/test_lab_doma_requests.py)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from ca.authority import CertificateAuthority, IssuedCredential
from ca.tokens import (
    ANY_AUDIENCE,
    DEFAULT_LIFETIME,
    TokenError,
    TokenMinter,
    client_identity,
    ensure_issuer_key,
    jwks,
    openid_configuration,
    parse_storage_scope,
    token_audience,
)
from orchestrator.endpoints import BENCHMARK_PREFIX
from orchestrator.servers import access
from orchestrator.token_endpoint import DEFAULT_SCOPES, OAuthError, TokenEndpoint, granted_scopes
from orchestrator.token_issuer import (
    IssuerService,
    document_routes,
    issuer_documents,
    main,
    server_context,
)
from tests.support.proxy import make_proxy

ISSUER = "https://127.0.0.1:8444"
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
JSON = {"Content-Type": "application/json"}
CC = "grant_type=client_credentials"


def test_the_discovery_document_names_a_token_endpoint_only_where_one_is_served() -> None:
    plain = openid_configuration(ISSUER)
    assert "token_endpoint" not in plain and "grant_types_supported" not in plain
    served = openid_configuration(ISSUER, token_endpoint=True)
    assert served["token_endpoint"] == ISSUER + "/token"
    assert served["grant_types_supported"] == ["client_credentials"]
    assert served["token_endpoint_auth_methods_supported"] == ["tls_client_auth"]
    assert {k: v for k, v in served.items() if k in plain} == plain


def test_without_a_scope_the_token_opens_the_smoke_test_directory() -> None:
    assert granted_scopes(None) == granted_scopes(" ") == DEFAULT_SCOPES
    assert DEFAULT_SCOPES == (
        "storage.read:/tpcbench-smoke",
        "storage.create:/tpcbench-smoke",
        "storage.modify:/tpcbench-smoke",
    )


@pytest.mark.parametrize(
    ("asked", "granted"),
    [
        ("storage.read:/tpcbench-source-16777216", ("storage.read:/tpcbench-source-16777216",)),
        ("storage.read:/tokens/tpcbench-source-1", ("storage.read:/tokens/tpcbench-source-1",)),
        ("storage.read:/tpcbench-", ("storage.read:/tpcbench-",)),
        (
            "storage.create:/tokens/tpcbench-x storage.modify:/tpcbench-smoke/",
            ("storage.create:/tokens/tpcbench-x", "storage.modify:/tpcbench-smoke"),
        ),
        (
            "storage.create:/tpcbench-a  storage.create:/tpcbench-a/",
            ("storage.create:/tpcbench-a",),
        ),
    ],
)
def test_scopes_within_the_orchestrators_rights_are_granted_as_asked(
    asked: str, granted: tuple[str, ...]
) -> None:
    assert granted_scopes(asked) == granted


@pytest.mark.parametrize(
    ("asked", "why"),
    [
        ("storage.create:/tpcbench-source-16777216", "beyond the orchestrator's rights"),
        ("storage.modify:/tokens/tpcbench-source-1", "beyond the orchestrator's rights"),
        # a bare prefix of the source files' names would reach them on xrootd 5.5.3
        ("storage.create:/tpcbench-s", "beyond the orchestrator's rights"),
        ("storage.modify:/tpcbench-", "beyond the orchestrator's rights"),
        ("storage.read:/", "beyond the orchestrator's rights"),
        ("storage.read:/elsewhere", "beyond the orchestrator's rights"),
        ("storage.read:/tokens", "beyond the orchestrator's rights"),
        ("storage.read:/tokensx/tpcbench-a", "beyond the orchestrator's rights"),
        ("storage.read:/tpcbench-a storage.create:/x", "storage.create:/x is beyond"),
        ("storage.read", "names no absolute path"),
        ("storage.read:tpcbench-a", "names no absolute path"),
        ("storage.read:/tpcbench-a/../b", "'.', '..' or '//'"),
        ("storage.read:/tpcbench-a//b", "'.', '..' or '//'"),
        ("storage.stage:/tpcbench-a", "not a storage scope of ours"),
        ("openid", "not a storage scope of ours"),
    ],
)
def test_other_scopes_are_invalid_scope_naming_why(asked: str, why: str) -> None:
    with pytest.raises(OAuthError, match=why) as refusal:
        granted_scopes(asked)
    assert (refusal.value.status, refusal.value.error) == (400, "invalid_scope")


def test_the_benchmark_prefix_is_the_one_the_servers_authorize() -> None:
    assert f"u {access.ORCHESTRATOR} " in access.render_authdb()
    assert f" {BENCHMARK_PREFIX} a" in access.render_authdb()


def test_scope_paths_are_normalised_or_refused() -> None:
    assert parse_storage_scope("storage.modify:/a/b/") == ("storage.modify", "/a/b")
    assert parse_storage_scope("storage.read:/") == ("storage.read", "/")
    with pytest.raises(TokenError, match="printable"):
        parse_storage_scope("storage.read:/a\x00b")


def test_the_audience_is_any_or_one_servers_origin() -> None:
    assert token_audience(None) == token_audience("") == ANY_AUDIENCE
    for origin in ("https://10.99.91.2:8443", "https://lab-1", "https://[fd00::1]:8443"):
        assert token_audience(origin) == origin
    for bad in ("http://10.99.91.2:8443", "https://lab-1/path", "lab-1", "https://a b"):
        with pytest.raises(TokenError, match="neither"):
            token_audience(bad)


@dataclass(frozen=True)
class Parties:
    ca: CertificateAuthority
    orchestrator: IssuedCredential
    alice: IssuedCredential
    host: IssuedCredential
    stranger: IssuedCredential  # another CA's, named like our orchestrator
    orchestrator_proxy: Path
    alice_proxy: Path


@pytest.fixture(scope="module")
def parties(tmp_path_factory: pytest.TempPathFactory) -> Parties:
    base = tmp_path_factory.mktemp("parties")
    ca = CertificateAuthority.init(base / "ca")
    other = CertificateAuthority.init(base / "other", subject="/DC=org/DC=elsewhere/CN=Other CA")
    orchestrator, alice = ca.issue_client("orchestrator"), ca.issue_client("alice")
    return Parties(
        ca=ca,
        orchestrator=orchestrator,
        alice=alice,
        host=ca.issue_host("localhost", ips=["127.0.0.1"]),
        stranger=other.issue_client("orchestrator"),
        orchestrator_proxy=make_proxy(orchestrator.cert, orchestrator.key, base / "x509up"),
        alice_proxy=make_proxy(alice.cert, alice.key, base / "alice-proxy"),
    )


def der(path: Path) -> bytes:
    return x509.load_pem_x509_certificate(path.read_bytes()).public_bytes(Encoding.DER)


def test_a_clients_identity_is_its_subject_or_its_proxys_issuer(parties: Parties) -> None:
    assert client_identity(der(parties.orchestrator.cert)) == parties.orchestrator.subject_dn
    assert client_identity(der(parties.orchestrator_proxy)) == parties.orchestrator.subject_dn
    assert client_identity(der(parties.alice_proxy)) == parties.alice.subject_dn
    assert client_identity(None) is None


@dataclass(frozen=True)
class Issuer:
    url: str  # where it is served (its tokens' `iss` is ISSUER)


@pytest.fixture(scope="module")
def issuer(parties: Parties, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Issuer]:
    folder = tmp_path_factory.mktemp("issuer")
    key = ensure_issuer_key(parties.ca.directory)
    host = parties.host
    service = IssuerService(
        ("127.0.0.1", 0),
        document_routes(folder),
        token_endpoint=TokenEndpoint.of(
            TokenMinter.for_key(ISSUER, key), [parties.orchestrator.subject_dn]
        ),
        tls=server_context(host.cert, host.key, parties.ca.certdir),
        log_requests=False,
    ).start()
    url = f"https://127.0.0.1:{service.port}"
    for name, text in issuer_documents(url, key, token_endpoint=True).items():
        (folder / name).write_text(text)
    try:
        yield Issuer(url)
    finally:
        service.close()


def ask(
    issuer: Issuer,
    parties: Parties,
    cert: Path | None,
    key: Path | None = None,
    data: str = CC,
    headers: dict[str, str] = FORM,
) -> httpx.Response:
    """A token request as the smoke test makes it, with `cert` (and `key`) as the client's."""
    context = ssl.create_default_context(cafile=str(parties.ca.cert_path))
    if cert is not None:
        context.load_cert_chain(str(cert), str(key) if key else None)
    with httpx.Client(verify=context, timeout=10) as http:
        return http.post(issuer.url + "/token", content=data, headers=headers)


def claims_of(token: str, parties: Parties) -> dict:
    (key,) = jwt.PyJWKSet.from_dict(jwks(parties.ca.directory / "tokens" / "issuer-key.pem")).keys
    return jwt.decode(token, key.key, algorithms=["RS256"], audience=ANY_AUDIENCE, issuer=ISSUER)


def test_the_orchestrator_gets_a_short_lived_token_with_its_certificate_or_a_proxy(
    issuer: Issuer, parties: Parties
) -> None:
    for cert, key in ((parties.orchestrator.cert, parties.orchestrator.key),
                      (parties.orchestrator_proxy, None)):  # fmt: skip
        answer = ask(issuer, parties, cert, key)
        assert answer.status_code == 200, answer.text
        assert answer.headers["cache-control"] == "no-store"
        body = answer.json()
        assert set(body) == {"access_token", "token_type", "expires_in", "scope"}
        assert body["token_type"] == "Bearer"
        assert body["expires_in"] == DEFAULT_LIFETIME.total_seconds() == 1200
        assert body["scope"] == " ".join(DEFAULT_SCOPES)
        claims = claims_of(body["access_token"], parties)
        assert claims["scope"] == body["scope"] and claims["wlcg.ver"] == "1.0"
        assert claims["exp"] - claims["iat"] == 1200


def test_a_scope_and_an_audience_are_granted_as_asked(issuer: Issuer, parties: Parties) -> None:
    asked = "scope=storage.read%3A%2Ftpcbench-source-1&audience=https%3A%2F%2F10.99.91.2%3A8443"
    data = f"{CC}&{asked}"
    answer = ask(issuer, parties, parties.orchestrator_proxy, data=data)
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    (key,) = jwt.PyJWKSet.from_dict(jwks(parties.ca.directory / "tokens" / "issuer-key.pem")).keys
    claims = jwt.decode(token, key.key, algorithms=["RS256"], audience="https://10.99.91.2:8443")
    assert claims["scope"] == "storage.read:/tpcbench-source-1"


def test_no_one_else_gets_a_token(issuer: Issuer, parties: Parties) -> None:
    refusals = {
        "anonymous": ask(issuer, parties, None),
        "alice": ask(issuer, parties, parties.alice.cert, parties.alice.key),
        "alice's proxy": ask(issuer, parties, parties.alice_proxy),
        "a host of ours": ask(issuer, parties, parties.host.cert, parties.host.key),
    }
    for who, answer in refusals.items():
        assert answer.status_code == 401, (who, answer.text)
        assert answer.json()["error"] == "invalid_client", who
        assert "access_token" not in answer.text
    assert parties.alice.subject_dn in refusals["alice's proxy"].json()["error_description"]
    # another CA's certificate, though named like the orchestrator, fails the TLS handshake
    with pytest.raises(httpx.TransportError, match="unknown ca"):
        ask(issuer, parties, parties.stranger.cert, parties.stranger.key)


@pytest.mark.parametrize(
    ("data", "headers", "status", "error"),
    [
        ("grant_type=password&username=a", FORM, 400, "unsupported_grant_type"),
        ("grant_type=authorization_code", FORM, 400, "unsupported_grant_type"),
        ("scope=storage.read%3A%2Ftpcbench-a", FORM, 400, "invalid_request"),
        (f"{CC}&{CC}", FORM, 400, "invalid_request"),
        ('{"grant_type": "client_credentials"}', JSON, 400, "invalid_request"),
        (f"{CC}&scope=storage.create%3A%2Ftpcbench-source-1", FORM, 400, "invalid_scope"),
        (f"{CC}&audience=http%3A%2F%2Fx", FORM, 400, "invalid_request"),
    ],
)  # fmt: skip
def test_bad_requests_get_the_oauth_error_that_names_them(
    issuer: Issuer, parties: Parties, data: str, headers: dict[str, str], status: int, error: str
) -> None:
    answer = ask(issuer, parties, parties.orchestrator_proxy, data=data, headers=headers)
    assert (answer.status_code, answer.json()["error"]) == (status, error), answer.text
    assert answer.json()["error_description"]


def test_the_documents_stay_open_and_the_endpoint_wants_a_post(
    issuer: Issuer, parties: Parties
) -> None:
    context = ssl.create_default_context(cafile=str(parties.ca.cert_path))
    with httpx.Client(verify=context, timeout=10) as http:  # no client certificate
        config = http.get(issuer.url + "/.well-known/openid-configuration").json()
        assert config["token_endpoint"] == issuer.url + "/token"
        assert http.get(config["jwks_uri"]).status_code == 200
        assert http.get(issuer.url + "/token").status_code == 405
        assert http.post(issuer.url + "/jwks", content=b"x").status_code == 404
        too_big = http.post(issuer.url + "/token", content=b"a" * 9000, headers=FORM)
        assert (too_big.status_code, too_big.json()["error"]) == (400, "invalid_request")


def test_the_command_wants_the_whole_endpoint_or_none(
    parties: Parties, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    host = parties.host
    base = ["--bind", "127.0.0.1", "--port", "0", "--documents", str(tmp_path),
            "--cert", str(host.cert), "--key", str(host.key)]  # fmt: skip
    key = str(ensure_issuer_key(parties.ca.directory))
    with pytest.raises(SystemExit) as exit_:
        main([*base, "--signing-key", key, "--client-ca-dir", str(parties.ca.certdir)])
    assert exit_.value.code == 2
    assert "at least one --orchestrator-dn" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # no discovery document yet: no issuer URL
        main([*base, "--signing-key", key, "--client-ca-dir", str(parties.ca.certdir),
              "--orchestrator-dn", parties.orchestrator.subject_dn])  # fmt: skip
    assert exit_.value.code == 2
    assert "discovery document" in capsys.readouterr().err


def test_an_issuer_without_the_key_serves_no_token_endpoint(
    parties: Parties, tmp_path: Path
) -> None:
    """As the chart runs it: the documents only; POST /token is 404, no client certificate
    is asked for."""
    key = ensure_issuer_key(parties.ca.directory)
    host = parties.host
    service = IssuerService(
        ("127.0.0.1", 0),
        document_routes(tmp_path),
        tls=server_context(host.cert, host.key),
        log_requests=False,
    ).start()
    url = f"https://127.0.0.1:{service.port}"
    for name, text in issuer_documents(url, key).items():
        (tmp_path / name).write_text(text)
    try:
        context = ssl.create_default_context(cafile=str(parties.ca.cert_path))
        context.load_cert_chain(str(parties.orchestrator.cert), str(parties.orchestrator.key))
        with httpx.Client(verify=context, timeout=10) as http:
            config = http.get(url + "/.well-known/openid-configuration").json()
            assert "token_endpoint" not in config
            answer = http.post(url + "/token", content=CC, headers=FORM)
            assert answer.status_code == 404 and "access_token" not in answer.text
            assert http.get(url + "/token").status_code == 404
    finally:
        service.close()

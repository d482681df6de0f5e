"""Token-authorized HTTP-TPC requests without a server: which token goes where, with what scope
and audience, and what a transfer without a token issuer records."""

from __future__ import annotations

import asyncio
from pathlib import Path

import jwt
import pytest

from ca.tokens import TokenMinter, ensure_issuer_key
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.transfers import GridFtpTpc, HttpsTpc, XrootdTpc
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.token_headers import copy_token_headers, delete_token_header

SRC = Endpoint(name="a", address="10.99.1.2", ports={"https": 8443, "root": 1094, "gridftp": 2811})
DST = Endpoint(name="b", address="10.99.2.2", ports={"https": 8443, "root": 1094, "gridftp": 2811})


@pytest.fixture
def creds(tmp_path: Path) -> ClientCredentials:
    minter = TokenMinter.for_key("https://10.99.0.1:8444", ensure_issuer_key(tmp_path))
    return ClientCredentials(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path, tokens=minter)


def claims(header: str) -> dict:
    scheme, token = header.split(" ", 1)
    assert scheme == "Bearer"
    return jwt.decode(token, options={"verify_signature": False})


def test_pull_gives_the_destination_a_create_token_and_forwards_a_read_token(
    creds: ClientCredentials,
) -> None:
    copy = TransferRequest(SRC, DST, "/tokens/src", "/tokens/dst", 1, creds, timeout=600)
    headers = copy_token_headers(copy, pull=True)
    own, forwarded = (
        claims(headers["Authorization"]),
        claims(headers["TransferHeaderAuthorization"]),
    )
    assert (own["scope"], own["aud"]) == ("storage.create:/tokens/dst", "https://10.99.2.2:8443")
    assert (forwarded["scope"], forwarded["aud"]) == (
        "storage.read:/tokens/src",
        "https://10.99.1.2:8443",
    )
    # short-lived, yet longer than the transfer may take (a multi-stream pull re-sends it)
    assert own["exp"] - own["iat"] == 600 + 60


def test_push_gives_the_source_the_read_token_and_forwards_the_create_token(
    creds: ClientCredentials,
) -> None:
    copy = TransferRequest(SRC, DST, "/tokens/src", "/tokens/dst", 1, creds, timeout=30)
    headers = copy_token_headers(copy, pull=False)
    assert claims(headers["Authorization"])["scope"] == "storage.read:/tokens/src"
    assert claims(headers["TransferHeaderAuthorization"])["scope"] == "storage.create:/tokens/dst"


def test_a_delete_token_may_look_up_and_remove_one_file(creds: ClientCredentials) -> None:
    token = claims(delete_token_header(creds, DST, "/tokens/dst")["Authorization"])
    assert token["scope"] == "storage.read:/tokens/dst storage.modify:/tokens/dst"
    assert token["aud"] == "https://10.99.2.2:8443"


def test_token_auth_without_an_issuer_is_an_auth_failure(tmp_path: Path) -> None:
    creds = ClientCredentials(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path)
    record = asyncio.run(
        HttpsTpc().copy(
            TransferRequest(SRC, DST, "/tokens/s", "/tokens/d", 1, creds, 10, index=2, auth="token")
        )
    )
    assert (record.index, record.outcome, record.error_class) == (2, "failure", "auth")
    assert "no token issuer" in record.message


def test_only_https_declares_tokens() -> None:
    assert HttpsTpc.auths == ("x509", "token")
    assert GridFtpTpc.auths == XrootdTpc.auths == ("x509",)


def test_a_measurement_refuses_an_auth_its_tool_lacks(creds: ClientCredentials) -> None:
    for auth, match in (
        ("token", "gridftp by the native client with token: it authorizes with x509 only"),
        ("kerberos", "unknown auth"),
    ):
        with pytest.raises(ValueError, match=match):
            request = MeasurementRequest.between(SRC, DST, "gridftp", 1, auth=auth)  # type: ignore[arg-type]
            asyncio.run(run_measurement(request, creds=creds))


def test_token_transfers_write_into_the_token_area() -> None:
    assert destination_name("u", 3, "https", "token") == "/tokens/tpcbench-u-3"
    assert destination_name("u", 3, "https") == "/tpcbench-u-3"

"""The gfal2 client's token mode without servers: which protocols take tokens, the tokens'
scopes and audiences, how each protocol carries them, and that no token reaches a record.

The copies themselves run against the lab in test_transfer_gfal2_lab.py.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ca.tokens import TokenMinter, ensure_issuer_key
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers import transfer_tool, unsupported_reason
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.gfal2 import GFAL_PYTHON, gfal_copy_argv, gfal_environment
from orchestrator.transfers.gfal2_tokens import (
    BEARER_COPY,
    TOKENS_VARIABLE,
    bearer_copy_argv,
    bearer_copy_environment,
    endpoint_tokens,
    redact,
    with_authz,
)

SRC = Endpoint("a", "10.99.1.2", data_root="/data/a")
DST = Endpoint("b", "10.99.2.2", data_root="/data/b")


@pytest.fixture
def creds(tmp_path: Path) -> ClientCredentials:
    minter = TokenMinter.for_key("https://10.99.0.1:8444", ensure_issuer_key(tmp_path))
    return ClientCredentials(tmp_path / "u.pem", tmp_path / "u.key", tmp_path / "ca", minter)


def claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def test_https_and_root_take_tokens_and_gridftp_says_why_not() -> None:
    assert unsupported_reason("https", "gfal2", "token") is None
    assert unsupported_reason("root", "gfal2", "token") is None
    why = unsupported_reason("gridftp", "gfal2", "token")
    assert why == "gridftp by the gfal2 client with token: it authorizes with x509 only"
    assert transfer_tool("https", "gfal2", mode="push").auths == ("x509", "token")


@pytest.mark.parametrize(
    ("protocol", "destination_scope"),
    [
        ("https", "storage.create:/tokens/d storage.read:/tokens/d"),  # gfal2 stats it
        ("root", "storage.create:/tokens/d"),
    ],
)
def test_each_end_gets_its_own_least_scope_token(
    creds: ClientCredentials, protocol: str, destination_scope: str
) -> None:
    copy = TransferRequest(SRC, DST, "/tokens/s", "/tokens/d", 1, creds, timeout=60)
    read, write = endpoint_tokens(copy, protocol)
    source, destination = claims(read), claims(write)
    assert (source["scope"], source["aud"]) == ("storage.read:/tokens/s", "https://10.99.1.2:8443")
    assert (destination["scope"], destination["aud"]) == (
        destination_scope,
        "https://10.99.2.2:8443",
    )
    assert source["exp"] - source["iat"] == 60 + 60  # the timeout and a minute's margin


def test_root_carries_the_token_in_the_url_and_records_never_show_it() -> None:
    url = with_authz("root://10.99.1.2:1094//tokens/s", "eyJ.a-b_c.d")
    assert url == "root://10.99.1.2:1094//tokens/s?authz=Bearer%20eyJ.a-b_c.d"
    said = f"Unable to open target {url}&xrdcl.intent=tpc (destination)"
    assert redact(said) == (
        "Unable to open target root://10.99.1.2:1094//tokens/s?authz=Bearer%20<token>"
        "&xrdcl.intent=tpc (destination)"
    )


def test_https_runs_the_driver_with_gfal_copys_arguments_and_tokens_in_the_environment(
    creds: ClientCredentials,
) -> None:
    argv = gfal_copy_argv("https", "https://a/s", "https://b/d", 2)
    driven = bearer_copy_argv(argv, GFAL_PYTHON)
    assert driven[:5] == [GFAL_PYTHON, "-I", "-u", "-Wignore", str(BEARER_COPY)]
    assert driven[5:] == argv[1:] and not any("eyJ" in part for part in driven)
    env = bearer_copy_environment({"https://a/s": "t1", "https://b/d": "t2"})
    assert json.loads(env[TOKENS_VARIABLE]) == {"https://a/s": "t1", "https://b/d": "t2"}
    token_env = gfal_environment("https", creds, 2, SRC, DST, "token")
    assert "X509_USER_CERT" not in token_env and "X509_USER_KEY" not in token_env
    assert token_env["X509_CERT_DIR"] == str(creds.certdir)  # still verifies the servers


def test_the_driver_reads_the_variable_this_side_writes() -> None:
    # The driver runs under the system python and cannot import our package.
    tree = ast.parse(BEARER_COPY.read_text())
    assigned = {
        node.targets[0].id: node.value.value  # type: ignore[attr-defined]
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
    }
    assert assigned["TOKENS_VARIABLE"] == TOKENS_VARIABLE


def test_the_driver_without_tokens_fails_as_gfal_copy_does() -> None:
    result = subprocess.run(
        bearer_copy_argv(["gfal-copy", "https://a/s", "https://b/d"], GFAL_PYTHON),
        capture_output=True,
        text=True,
        timeout=60,
        env={},
    )
    assert result.returncode == 22
    assert result.stderr == f"gfal-copy error: 22 (Invalid argument) - {TOKENS_VARIABLE} is empty\n"


def test_no_token_issuer_is_an_auth_failure_before_any_process(tmp_path: Path) -> None:
    creds = ClientCredentials(tmp_path / "u.pem", tmp_path / "u.key", tmp_path / "ca")
    tool = transfer_tool("root", "gfal2")
    record = asyncio.run(
        tool.copy(
            TransferRequest(SRC, DST, "/tokens/s", "/tokens/d", 1, creds, 60, size=10, auth="token")
        )
    )
    assert (record.succeeded, record.error_class) == (False, "auth")
    assert record.message.startswith("tokens: token authorization asked for, but")
    gridftp = asyncio.run(
        transfer_tool("gridftp", "gfal2").copy(
            TransferRequest(SRC, DST, "/s", "/d", 1, creds, 60, auth="token")
        )
    )
    assert gridftp.error_class == "auth" and "cannot pass token" in gridftp.message

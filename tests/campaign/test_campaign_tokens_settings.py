"""Tokens for a campaign on a cluster: the chart's environment names the issuer and its key,
and a campaign with `auth token` gets a minter for them, or stops before it starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ca.tokens import ensure_issuer_key
from orchestrator.campaign.context import token_minter
from orchestrator.campaign.settings import Settings, load_settings
from orchestrator.errors import UserError

URL = "https://rel-tpc-bench-token-issuer.tpc.svc"


def settings_from(env: dict[str, str], tmp_path: Path) -> Settings:
    return load_settings(env={"TPCBENCH_HOME": str(tmp_path), **env})


def test_the_charts_environment_gives_a_minter_for_its_issuer(tmp_path: Path) -> None:
    key = ensure_issuer_key(tmp_path / "ca")
    settings = settings_from(
        {
            "TPCBENCH_AUTH": "x509,token",
            "TPCBENCH_TOKEN_ISSUER": URL,
            "TPCBENCH_TOKEN_ISSUER_KEY": str(key),
        },
        tmp_path,
    )
    assert settings.auth == ["x509", "token"]
    minter = token_minter(settings)
    assert minter is not None and (minter.issuer_url, minter.key_path) == (URL, key)
    assert minter.mint(["storage.read:/tokens/x"])


def test_certificates_alone_need_no_issuer(tmp_path: Path) -> None:
    assert token_minter(settings_from({"TPCBENCH_AUTH": "x509"}, tmp_path)) is None


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({}, "TPCBENCH_TOKEN_ISSUER and TPCBENCH_TOKEN_ISSUER_KEY"),
        ({"TPCBENCH_TOKEN_ISSUER": URL}, "TPCBENCH_TOKEN_ISSUER_KEY"),
        (
            {"TPCBENCH_TOKEN_ISSUER": URL, "TPCBENCH_TOKEN_ISSUER_KEY": "/nonexistent/key.pem"},
            f"cannot mint tokens for {URL}: the token issuer key /nonexistent/key.pem does not",
        ),
    ],
)
def test_a_token_campaign_without_a_usable_key_stops_saying_why(
    tmp_path: Path, env: dict[str, str], complaint: str
) -> None:
    settings = settings_from({"TPCBENCH_AUTH": "token", **env}, tmp_path)
    with pytest.raises(UserError, match=complaint):
        token_minter(settings)

"""xrootd's token configuration from the one source: absent without an issuer, and with one
the SciTokens plugin, its settings and an authorization database open except the token area."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.servers import (
    XrootdSettings,
    render_xrootd_config,
    xrootd_environment,
    xrootd_files,
)
from orchestrator.servers.__main__ import main as servers_main

PLAIN = XrootdSettings(
    name="lab-1",
    data_root=Path("/dev/shm/d1"),
    run_dir=Path("/srv/n1/run"),
    host_cert=Path("/srv/n1/pki/hostcert.pem"),
    host_key=Path("/srv/n1/pki/hostkey.pem"),
    certdir=Path("/srv/certificates"),
)
WITH_TOKENS = replace(
    PLAIN, token_issuer="https://10.99.0.1:8444", token_audience="https://10.99.1.2:8443"
)


def test_without_an_issuer_nothing_about_authorization_is_configured() -> None:
    text = render_xrootd_config(PLAIN)
    for word in ("authorize", "authdb", "authlib", "header2cgi", "scitokens"):
        assert word not in text.lower()
    assert xrootd_files(PLAIN) == {}
    assert xrootd_environment(PLAIN) == {"XRDTPC_CADIR": "/srv/certificates"}


def test_an_issuer_adds_the_scitokens_plugin_after_the_same_lines() -> None:
    text, plain = render_xrootd_config(WITH_TOKENS), render_xrootd_config(PLAIN)
    assert text.startswith(plain)
    added = text[len(plain) :].splitlines()
    assert added == [
        "http.header2cgi Authorization authz",
        "ofs.authorize 1",
        "acc.authdb /srv/n1/run/authdb",
        "ofs.authlib ++ libXrdAccSciTokens.so config=/srv/n1/run/scitokens.cfg",
    ]
    assert xrootd_environment(WITH_TOKENS)["XDG_CACHE_HOME"] == "/srv/n1/run/cache"


def test_the_authorization_database_closes_only_the_token_area() -> None:
    files = xrootd_files(WITH_TOKENS)
    # first match wins in XrdAcc: the token area's denial must precede the open root
    assert files[Path("/srv/n1/run/authdb")] == "u * /tokens/ -a / a\n"


def test_the_scitokens_settings_name_the_issuer_and_both_audiences() -> None:
    text = xrootd_files(WITH_TOKENS)[Path("/srv/n1/run/scitokens.cfg")]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines == [
        "[Global]",
        "audience = https://wlcg.cern.ch/jwt/v1/any, https://10.99.1.2:8443",
        "onmissing = passthrough",
        "[Issuer tpc-bench]",
        "issuer = https://10.99.0.1:8444",
        "base_path = /",
    ]


def test_the_images_entrypoint_writes_the_token_files_and_the_token_area(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, data = tmp_path / "run", tmp_path / "data"
    data.mkdir()
    argv = [
        "xrootd", "--name", "n1", "--run-dir", str(run_dir), "--data-root", str(data),
        "--token-issuer", "https://issuer:8444", "--token-audience", "https://n1:8443",
        "--source-size", "4096", "--exec",
    ]  # fmt: skip
    seen: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda file, args, env: seen.append(list(args)))
    servers_main(argv)
    assert seen and seen[0][0] == "xrootd"
    assert "libXrdAccSciTokens.so" in (run_dir / "xrootd.cfg").read_text()
    assert (run_dir / "authdb").read_text() == "u * /tokens/ -a / a\n"
    assert "issuer = https://issuer:8444" in (run_dir / "scitokens.cfg").read_text()
    assert (run_dir / "cache").is_dir()
    linked = data / "tokens" / "tpcbench-source-4096"
    assert os.path.samefile(linked, data / "tpcbench-source-4096")  # one copy in memory


def test_an_audience_without_an_issuer_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = servers_main(["xrootd", "--token-audience", "https://n1:8443"])
    assert code == 1
    assert "--token-audience needs --token-issuer" in capsys.readouterr().err

"""xrootd's authentication and authorization from the one source: GSI and grid-mapped
certificates, macaroons and the authorization database on every server, the SciTokens plugin
with an issuer (what each allows is tried on real servers in test_lab_refusals.py)."""

from __future__ import annotations

import base64
import os
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.endpoints import source_name
from orchestrator.servers import (
    render_xrootd_config,
    xrootd_environment,
    xrootd_files,
)
from orchestrator.servers.__main__ import main as servers_main
from orchestrator.servers.access import (
    dn_prefix,
    new_macaroon_secret,
    render_authdb,
    render_xrootd_gridmap,
)
from tests.support.server_settings import LAB_NODE_XROOTD

PLAIN = LAB_NODE_XROOTD
WITH_TOKENS = replace(
    PLAIN, token_issuer="https://10.99.0.1:8444", token_audience="https://10.99.1.2:8443"
)
ORCHESTRATOR_DN = "/DC=org/DC=tpc-bench/OU=People/CN=tpcbench-orchestrator"


def directives(text: str) -> list[tuple[str, str]]:
    pairs = (line.partition(" ") for line in text.splitlines() if line[:1] not in ("", "#"))
    return [(key, value) for key, _, value in pairs]


def test_every_server_authenticates_and_authorizes_both_protocols() -> None:
    found = directives(render_xrootd_config(PLAIN))
    assert ("ofs.authorize", "1") in found
    assert ("acc.authdb", "/srv/n1/run/authdb") in found
    # root://: GSI is the only protocol, users mapped by the grid map or refused
    assert ("sec.protbind", "* only gsi") in found
    gsi = dict(found)["sec.protocol"]
    assert gsi.startswith("gsi ") and "-gridmap:/srv/n1/xrootd-gridmap" in gsi
    assert "-gmapopt:2" in gsi and "-cert:/srv/n1/pki/hostcert.pem" in gsi
    # HTTPS: the same map, and macaroons issued and accepted
    assert ("http.gridmap", "/srv/n1/xrootd-gridmap") in found
    assert ("http.exthandler", "xrdmacaroons libXrdMacaroons.so") in found
    assert ("macaroons.secretkey", "/srv/n1/pki/macaroon-secret") in found
    assert ("ofs.authlib", "++ libXrdMacaroons.so") in found
    assert xrootd_files(PLAIN) == {Path("/srv/n1/run/authdb"): render_authdb()}


def test_the_benchs_open_access_renders_the_configuration_before_authentication() -> None:
    """bench/authentication.py's "before": the same server, nothing checked (never a default)."""
    assert not PLAIN.open_access
    opened = replace(PLAIN, open_access=True)
    text, secure = render_xrootd_config(opened), render_xrootd_config(PLAIN)
    assert secure.startswith(text.rstrip("\n"))
    keys = {key for key, _ in directives(text)}
    assert {"xrd.protocol", "http.exthandler", "ofs.tpc", "xrd.tls"} <= keys
    checks = ("sec.", "xrootd.seclib", "http.gridmap", "macaroons.", "ofs.authorize", "acc.")
    assert not [key for key in keys if key.startswith(checks)]
    assert "libXrdMacaroons" not in text and "ofs.authlib" not in keys
    assert xrootd_files(opened) == {}  # no authorization database
    with pytest.raises(ValueError, match="open-access server takes no token issuer"):
        replace(WITH_TOKENS, open_access=True)


def test_an_issuer_adds_only_the_scitokens_plugin() -> None:
    text, plain = render_xrootd_config(WITH_TOKENS), render_xrootd_config(PLAIN)
    assert text.startswith(plain)
    assert text[len(plain) :].splitlines() == [
        "ofs.authlib ++ libXrdAccSciTokens.so config=/srv/n1/run/scitokens.cfg"
    ]
    assert xrootd_environment(WITH_TOKENS)["XDG_CACHE_HOME"] == "/srv/n1/run/cache"
    assert "XDG_CACHE_HOME" not in xrootd_environment(PLAIN)


def test_the_root_copy_program_logs_in_with_the_host_certificate() -> None:
    env = xrootd_environment(PLAIN)
    assert env["X509_USER_CERT"] == "/srv/n1/pki/hostcert.pem"
    assert env["X509_USER_KEY"] == "/srv/n1/pki/hostkey.pem"
    assert env["X509_CERT_DIR"] == env["XRDTPC_CADIR"] == "/srv/certificates"
    assert env["XrdSecGSICREATEPROXY"] == "0"  # no SHA-1 proxy


def test_the_authorization_database_names_only_our_two_identities() -> None:
    lines = [line for line in render_authdb().splitlines() if not line.startswith("#")]
    assert lines == [
        "u tpcbench-orchestrator /tpcbench-source- rl /tpcbench- a",
        "u tpcbench-server /tpcbench-source- rl",
    ]
    # the source prefix is the name every source file gets
    assert source_name(1 << 30).startswith("/tpcbench-source-")


def test_the_grid_map_maps_the_orchestrator_exactly_and_hosts_by_prefix() -> None:
    host_dn = "/DC=org/DC=tpc-bench/OU=Services/CN=lab-1"
    text = render_xrootd_gridmap([ORCHESTRATOR_DN, ORCHESTRATOR_DN], dn_prefix(host_dn))
    assert text.splitlines() == [
        f'"{ORCHESTRATOR_DN}" tpcbench-orchestrator',
        '"^/DC=org/DC=tpc-bench/OU=Services/CN=" tpcbench-server',
    ]
    with pytest.raises(ValueError, match="double quote"):
        render_xrootd_gridmap(['/CN=a"b'], dn_prefix(host_dn))
    with pytest.raises(ValueError, match="no CN"):
        dn_prefix("/DC=org/OU=Services")


def test_a_macaroon_key_is_one_base64_line_of_48_bytes() -> None:
    first, second = new_macaroon_secret(), new_macaroon_secret()
    assert first != second and first.endswith("\n") and len(first.strip()) == 64
    assert len(base64.b64decode(first)) == 48  # XrdMacaroons wants at least 32


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
    assert (run_dir / "authdb").read_text() == render_authdb()
    assert "issuer = https://issuer:8444" in (run_dir / "scitokens.cfg").read_text()
    assert (run_dir / "cache").is_dir()
    linked = data / "tokens" / "tpcbench-source-4096"
    assert os.path.samefile(linked, data / "tpcbench-source-4096")  # one copy in memory


def test_an_audience_without_an_issuer_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = servers_main(["xrootd", "--token-audience", "https://n1:8443"])
    assert code == 1
    assert "--token-audience needs --token-issuer" in capsys.readouterr().err

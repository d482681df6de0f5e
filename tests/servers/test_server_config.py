"""The one source of server configuration: xrootd.cfg text and the gridftp command line."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.servers import (
    GridftpSettings,
    XrootdSettings,
    gridftp_command,
    gridftp_environment,
    render_grid_mapfile,
    render_xrootd_config,
    xrootd_command,
    xrootd_log_file,
)
from tests.support.server_settings import LAB_NODE_XROOTD


def xrootd_settings() -> XrootdSettings:
    return replace(LAB_NODE_XROOTD, root_port=21000, https_port=21001)


def directives(text: str) -> dict[str, str]:
    pairs = (line.split(None, 1) for line in text.splitlines() if line and line[0] != "#")
    return {key: value for key, value in pairs}


def test_xrootd_config_serves_https_tpc_and_root_on_the_given_ports() -> None:
    found = directives(render_xrootd_config(xrootd_settings()))
    assert found["xrd.port"] == "21000"
    assert found["xrd.protocol"] == "XrdHttp:21001 libXrdHttp.so"
    assert found["oss.localroot"] == "/dev/shm/d1"
    assert found["all.export"] == "/"
    assert found["xrd.tls"] == "/srv/n1/pki/hostcert.pem /srv/n1/pki/hostkey.pem"
    # the TPC plugin refuses to load without a CA directory
    assert found["xrd.tlsca"] == "certdir /srv/certificates"
    text = render_xrootd_config(xrootd_settings())
    assert "http.exthandler xrdtpc libXrdHttpTPC.so" in text.splitlines()
    assert found["ofs.tpc"].endswith("pgm /usr/bin/xrdcp --server")


def test_xrootd_runs_in_the_foreground_and_says_where_its_log_is() -> None:
    argv = xrootd_command(Path("/srv/n1/xrootd.cfg"), Path("/srv/n1/xrootd.log"), "lab-1")
    assert argv[0] == "xrootd"
    assert "-b" not in argv  # the caller keeps the pid
    assert argv[argv.index("-c") + 1] == "/srv/n1/xrootd.cfg"
    assert xrootd_log_file(Path("/srv/n1/xrootd.log"), "lab-1") == Path("/srv/n1/lab-1/xrootd.log")


def test_gridftp_advertises_its_own_address_and_port_range() -> None:
    settings = GridftpSettings(
        data_interface="10.99.1.2",
        host_cert=Path("/p/hostcert.pem"),
        host_key=Path("/p/hostkey.pem"),
        certdir=Path("/p/certificates"),
        grid_mapfile=Path("/p/grid-mapfile"),
        log_path=Path("/p/gridftp.log"),
        home_dir=Path("/dev/shm/d1"),
        port=2811,
        data_port_range=(20000, 20099),
    )
    argv = gridftp_command(settings)
    assert argv[argv.index("-data-interface") + 1] == "10.99.1.2"
    assert argv[argv.index("-port-range") + 1] == "20000,20099"
    assert argv[argv.index("-p") + 1] == "2811"
    assert "-S" not in argv  # detaching would lose the pid
    disabled = argv[argv.index("-disable-command-list") + 1].split(",")
    assert {"RNFR", "MKD", "RMD", "LIST", "NLST", "MLSD"} <= set(disabled)
    env = gridftp_environment(settings)
    assert env["X509_CERT_DIR"] == "/p/certificates"
    assert env["GRIDMAP"] == "/p/grid-mapfile"


def test_grid_mapfile_quotes_each_dn() -> None:
    text = render_grid_mapfile({"/DC=org/DC=tpc-bench/OU=People/CN=orchestrator": "tpcbench"})
    assert text == '"/DC=org/DC=tpc-bench/OU=People/CN=orchestrator" tpcbench\n'
    with pytest.raises(ValueError, match="double quote"):
        render_grid_mapfile({'/CN=a"b': "x"})

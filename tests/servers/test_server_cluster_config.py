"""Cluster roles in the one XRootD configuration (orchestrator/servers/cluster_roles.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.servers import (
    ClusterPlace,
    CmsDelay,
    cmsd_command,
    render_xrootd_config,
    xrootd_command,
)
from orchestrator.servers.cluster_roles import listen_lines
from tests.support.server_settings import LAB_NODE_XROOTD

MANAGER = ClusterPlace(role="manager", address="10.99.1.10", cms_port=3121)
SERVER = ClusterPlace(role="server", upstream="10.99.1.10:3121")
META = ClusterPlace(role="meta-manager", address="10.99.9.1", cms_port=3131)
SITE_MANAGER = replace(MANAGER, upstream="10.99.9.1:3131")


def config(place: ClusterPlace) -> list[str]:
    settings = replace(LAB_NODE_XROOTD, root_port=1094, https_port=1094, cluster=place)
    return render_xrootd_config(settings).splitlines()


def test_standalone_is_the_single_servers_configuration() -> None:
    lines = render_xrootd_config(LAB_NODE_XROOTD).splitlines()
    assert lines[5:7] == ["xrd.port 1094", "xrd.protocol XrdHttp:8443 libXrdHttp.so"]
    assert not [line for line in lines if line.startswith(("all.role", "all.manager", "cms."))]
    assert not [line for line in lines if line.startswith(("if ", "fi", "http.desthttps"))]
    assert LAB_NODE_XROOTD.cluster == ClusterPlace()


def test_manager_listens_per_program_and_serves_https_on_the_xroot_port() -> None:
    lines = config(MANAGER)
    assert lines[5:15] == [
        "all.role manager",
        "all.manager 10.99.1.10:3121",
        "xrd.port 1094 if exec xrootd",
        "xrd.port 3121 if exec cmsd",
        "cms.delay startup 2 lookup 1 qdl 2 suspend 1 drop 5",
        "if exec xrootd",
        "xrd.protocol XrdHttp:1094 libXrdHttp.so",
        "http.desthttps yes",
        "fi",
        f"xrd.tls {LAB_NODE_XROOTD.host_cert} {LAB_NODE_XROOTD.host_key}",
    ]
    # security as on a single server: the manager authorizes before it redirects
    assert "ofs.authorize 1" in lines and "sec.protbind * only gsi" in lines


def test_data_server_subscribes_to_its_manager_and_its_cmsd_listens_on_nothing() -> None:
    lines = config(SERVER)
    assert "all.role server" in lines and "all.manager 10.99.1.10:3121" in lines
    assert [line for line in lines if line.startswith("xrd.port")] == [
        "xrd.port 1094 if exec xrootd"
    ]


def test_a_site_manager_under_a_meta_manager_names_both() -> None:
    assert listen_lines(SITE_MANAGER, 1094, 1094)[:3] == [
        "all.role manager",
        "all.manager meta 10.99.9.1:3131",
        "all.manager 10.99.1.10:3121",
    ]
    assert listen_lines(META, 1094, 1094)[:4] == [
        "all.role meta manager",
        "all.manager meta 10.99.9.1:3131",
        "xrd.port 1094 if exec xrootd",
        "xrd.port 3131 if exec cmsd",
    ]


def test_the_lookup_delays_are_settings() -> None:
    place = replace(MANAGER, delay=CmsDelay(startup=5, lookup=3, qdl=4, suspend=2))
    assert "cms.delay startup 5 lookup 3 qdl 4 suspend 2 drop 5" in config(place)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"role": "manager"}, "needs its own cmsd"),
        ({"role": "meta-manager", "address": "a", "cms_port": 1, "upstream": "b:2"}, "no manager"),
        ({"role": "server"}, "needs its manager"),
        ({"role": "server", "upstream": "a:1", "cms_port": 3}, "runs no cmsd"),
        ({"role": "server", "upstream": "nohost"}, "not host:port"),
        ({"role": "standalone", "upstream": "a:1"}, "subscribes to no manager"),
        ({"role": "redirector"}, "not one of"),
    ],
)
def test_inconsistent_places_are_refused(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        ClusterPlace(**kwargs)


def test_a_clustered_node_must_serve_https_on_its_xroot_port() -> None:
    with pytest.raises(ValueError, match="https_port 8443 must be root_port 1094"):
        replace(LAB_NODE_XROOTD, cluster=MANAGER)


def test_cmsd_runs_beside_xrootd_from_the_same_config() -> None:
    config_path, log = Path("/srv/n1/xrootd.cfg"), Path("/srv/n1/cmsd.log")
    argv = cmsd_command(config_path, log, "ucsd-rdr")
    assert argv == ["cmsd", "-n", "ucsd-rdr", "-c", "/srv/n1/xrootd.cfg", "-l", "/srv/n1/cmsd.log"]
    assert xrootd_command(config_path, None, "ucsd-rdr")[1:] == argv[1:5]

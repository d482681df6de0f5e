"""`lab up --sites`: hosts grouped into sites, each site behind one shaped uplink, the emulated
WAN between sites only. The planning is checked without root; the lab itself is real
(namespaces, servers, the delay program), prefix tpcsi, subnets 10.99.225-228."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import orchestrator.lab.site_network as site_network
from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from orchestrator.lab.inventory import inventory_path, load_inventory
from orchestrator.lab.network import existing_namespaces
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.sites import parse_sites, plan_sites, site_lines, site_matrix
from orchestrator.lab.topology import LOOPBACK, NETNS, NodePlan
from orchestrator.lab.wan import measure_pair_rtts
from orchestrator.lab.wan_profile import PRP_SITES, derived_rtt_ms
from orchestrator.latency.target import rtt_within_target
from tests.support.running_lab import make_home

pytestmark = pytest.mark.lab
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

REPO = Path(__file__).resolve().parents[2]
NETWORK = LabNetwork(prefix="tpcsi", subnet_offset=225)  # 225 host, 226 uplinks, 227-228 LANs
SITES = "ucsd:2,unl:2"
UPLINK_GBIT = 1.0
WAN_RTT_MS = 20.0
OUR_SUBNETS = tuple(f"10.99.{octet}." for octet in range(225, 229))
TCPLOAD_PORT = 5311
TRIES = 3


def test_sites_are_parsed_and_bad_ones_named() -> None:
    assert parse_sites("ucsd:3, unl:2") == [("ucsd", 3), ("unl", 2)]
    for bad, words in [
        ("ucsd", "is not <site>:<hosts>"),
        ("UCSD:2", "is not <site>:<hosts>"),
        ("ucsd:0", "1 to 50 hosts"),
        ("ucsd:2,ucsd:1", "given twice"),
        ("global:2", "redirector level"),
    ]:
        with pytest.raises(UserError, match=words):
            parse_sites(bad)


def test_the_addressing_plan() -> None:
    layout = plan_sites("ucsd:3,unl:2", NETNS, NETWORK)
    ucsd, unl = layout.sites
    assert [h.name for h in layout.hosts] == ["ucsd-1", "ucsd-2", "ucsd-3", "unl-1", "unl-2"]
    assert [h.address for h in ucsd.hosts] == ["10.99.227.11", "10.99.227.12", "10.99.227.13"]
    assert [h.netns for h in unl.hosts] == ["tpcsi-unl-1", "tpcsi-unl-2"]
    assert {h.site for h in ucsd.hosts} == {"ucsd"} and unl.hosts[0].site == "unl"
    assert (unl.redirector.name, unl.redirector.address) == ("unl-rdr", "10.99.228.2")
    assert unl.redirector.netns == "tpcsi-unl-rdr"
    assert (ucsd.lan, ucsd.gateway, ucsd.router_namespace) == (
        "10.99.227.0/24", "10.99.227.1", "tpcsi-ucsd-gw"
    )  # fmt: skip
    assert (unl.wan_address, unl.uplink_address) == ("10.99.226.9", "10.99.226.10")
    assert layout.subnets() == ["10.99.226.0/24", "10.99.227.0/24", "10.99.228.0/24"]
    matrix = layout.host_matrix("uniform:30ms")
    assert matrix.target("ucsd-1", "ucsd-3") == 0.0 and matrix.target("ucsd-2", "unl-1") == 30


def test_a_site_matrix_file_names_sites(tmp_path: Path) -> None:
    path = tmp_path / "sites.yaml"
    path.write_text("rtt_ms:\n  ucsd: {unl: 40ms}\n")
    matrix = plan_sites("ucsd:1,unl:2", NETNS, NETWORK).host_matrix(str(path))
    assert matrix.target("unl-2", "ucsd-1") == 40.0 and matrix.target("unl-1", "unl-2") == 0.0


def test_redirector_levels_follow_the_sites_on_the_wan(tmp_path: Path) -> None:
    layout = plan_sites("ucsd:1,unl:1", NETNS, NETWORK, "global, regional")
    assert [(lv.name, lv.address, lv.netns) for lv in layout.levels] == [
        ("regional", "10.99.226.14", "tpcsi-regional"), ("global", "10.99.226.18", "tpcsi-global")
    ]  # fmt: skip
    assert layout.places == ["ucsd", "unl", "regional", "global"]
    assert "tpcsi-global" in layout.namespaces()
    # both levels run: global the meta-manager on top, regional a manager under it
    assert layout.describe_levels()["regional"] == {
        "address": "10.99.226.14", "netns": "tpcsi-regional", "state": "running"
    }  # fmt: skip
    assert layout.describe_levels()["global"]["state"] == "running"
    assert layout.meta is not None and layout.meta.name == "global"
    path = tmp_path / "wan.yaml"
    path.write_text("rtt_ms:\n  ucsd: {unl: 40, regional: 10}\n  unl: {regional: 30}\n")
    matrix = plan_sites("ucsd:1,unl:1", NETNS, NETWORK, "regional").host_matrix(str(path))
    assert matrix.target("ucsd-1", "unl-1") == 40.0  # hosts only: the levels run no servers
    with pytest.raises(UserError, match="no RTT for ucsd -> global"):
        layout.host_matrix(str(path))
    with pytest.raises(UserError, match="not 'national'"):
        plan_sites("ucsd:1", NETNS, NETWORK, "regional,national")


def test_the_prp_profile_places_sites_by_name() -> None:
    matrix = site_matrix("prp", ["unl", "xyz", "ucsd"])
    assert matrix.sites == {"unl": "UNL", "ucsd": "UCSD", "xyz": "Stanford"}
    assert matrix.target("ucsd", "unl") == derived_rtt_ms(PRP_SITES[0], PRP_SITES[2])
    assert matrix.target("xyz", "ucsd") == derived_rtt_ms(PRP_SITES[1], PRP_SITES[0])
    layout = plan_sites("ucsd:2,unl:1", NETNS, NETWORK)
    assert layout.host_matrix("prp").sites == {"ucsd-1": "UCSD", "ucsd-2": "UCSD", "unl-1": "UNL"}


def test_sites_need_netns_and_room_in_the_subnets() -> None:
    with pytest.raises(UserError, match="needs netns mode"):
        plan_sites(SITES, LOOPBACK, NETWORK)
    with pytest.raises(UserError, match="leaves no room"):
        plan_sites(SITES, NETNS, LabNetwork(prefix="tpcsi", subnet_offset=252))


def test_site_link_needs_sites() -> None:
    home = make_home()
    try:
        with pytest.raises(UserError, match="--site-link-gbit needs --sites"):
            start_lab(home, 1, 1 << 20, network=NETWORK, site_link_gbit=1.0)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_sites_with_nodes_is_a_usage_error() -> None:
    env = {**os.environ, "TPCBENCH_HOME": "/nonexistent", "TPCBENCH_LAB_PREFIX": "tpcsi"}
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator", "lab", "up", "--nodes", "2", "--sites", SITES],
        capture_output=True, text=True, env=env, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 2, result
    assert "--sites gives the hosts itself: drop --nodes" in result.stderr


def test_lab_status_names_each_site_and_its_running_redirector() -> None:
    layout = plan_sites("ucsd:2", NETNS, NETWORK)
    assert site_lines(layout.describe(2.5)) == [
        "site ucsd: ucsd-1, ucsd-2 on 10.99.227.0/24, uplink 2.5 Gbit/s; "
        "ucsd-rdr 10.99.227.2 running"
    ]
    assert site_lines(layout.describe(None))[0].endswith(
        "uplink uncapped; ucsd-rdr 10.99.227.2 running"
    )


def test_a_node_labs_inventory_json_has_no_sites_key(tmp_path: Path) -> None:
    client = ClientCredentials(cert=tmp_path / "c", key=tmp_path / "k", certdir=tmp_path)
    plain = LabInventory(nodes=[Endpoint(name="lab-1", address="10.99.1.2")], client=client,
                         file_size=1)  # fmt: skip
    assert "sites" not in plain.to_json() and plain.to_json()["nodes"][0]["site"] is None
    sited = replace(plain, sites=plan_sites("ucsd:1", NETNS, NETWORK).describe(None))
    assert LabInventory.from_json(json.loads(json.dumps(sited.to_json()))).sites == sited.sites
    assert LabInventory.from_json(plain.to_json()).sites == {}


def test_endpoint_site_round_trips_and_old_inventories_load() -> None:
    endpoint = Endpoint(name="ucsd-1", address="10.99.227.11", site="ucsd")
    assert Endpoint.from_json(endpoint.to_json()) == endpoint
    old = endpoint.to_json()
    del old["site"]
    assert Endpoint.from_json(old).site is None


def _leftovers() -> list[str]:
    """tpcsi namespaces, /etc/netns folders and host routes of this module's subnets."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    return (
        sorted(n for n in existing_namespaces() if n.startswith("tpcsi-"))
        + [str(p) for p in Path("/etc/netns").glob("tpcsi-*")]
        + [line for line in routes.splitlines() if line.startswith(OUR_SUBNETS)]
    )


@needs_root
def test_a_left_over_site_namespace_is_named_and_nothing_is_started() -> None:
    home = make_home()
    CertificateAuthority.init(home / "ca")
    subprocess.run(["ip", "netns", "add", "tpcsi-unl-gw"], check=True)
    try:
        with pytest.raises(UserError, match="namespace tpcsi-unl-gw already exists"):
            start_lab(home, file_size=1 << 20, network=NETWORK, sites=SITES)
        assert _leftovers() == ["tpcsi-unl-gw"]
    finally:
        subprocess.run(["ip", "netns", "del", "tpcsi-unl-gw"], check=True)
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@needs_root
def test_a_failure_half_way_through_the_sites_is_rolled_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The third LAN member fails: the WAN router, the first site and its members go again."""
    home = make_home()
    CertificateAuthority.init(home / "ca")
    joined: list[str] = []
    real = site_network.write_etc_netns

    def fail_third(record: LabRun, member: NodePlan, hosts_file: str) -> None:
        joined.append(member.name)
        if len(joined) == 3:
            raise UserError(f"made to fail at {member.name}")
        real(record, member, hosts_file)

    monkeypatch.setattr(site_network, "write_etc_netns", fail_third)
    try:
        with pytest.raises(UserError, match="made to fail at ucsd-rdr"):
            start_lab(home, file_size=1 << 20, network=NETWORK, sites=SITES, rtt="uniform:5ms")
        assert joined == ["ucsd-1", "ucsd-2", "ucsd-rdr"]
        assert _leftovers() == []
        assert not Path("/sys/class/net/tpcsi-h").exists()
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def site_lab() -> Iterator[tuple[Path, LabInventory]]:
    home = make_home()
    CertificateAuthority.init(home / "ca")
    try:
        inventory = start_lab(
            home, file_size=1 << 20, network=NETWORK, sites=SITES,
            site_link_gbit=UPLINK_GBIT, rtt=f"uniform:{WAN_RTT_MS:g}ms", redirectors="regional",
        )  # fmt: skip
        yield home, inventory
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@needs_root
def test_every_host_is_healthy_and_named_by_its_site(site_lab) -> None:
    home, inventory = site_lab
    assert [(n.name, n.site) for n in inventory.nodes] == [
        ("ucsd-1", "ucsd"), ("ucsd-2", "ucsd"), ("unl-1", "unl"), ("unl-2", "unl")
    ]  # fmt: skip
    assert all(inventory.health[n.name]["ok"] for n in inventory.nodes), inventory.health
    saved = load_inventory(inventory_path(home))
    assert [n.site for n in saved.nodes] == ["ucsd", "ucsd", "unl", "unl"]
    assert saved.sites["unl"]["hosts"] == ["unl-1", "unl-2"]
    assert saved.sites["ucsd"]["uplink_gbps"] == UPLINK_GBIT
    redirector = saved.sites["ucsd"]["redirector"]
    assert (redirector["name"], redirector["state"]) == ("ucsd-rdr", "running")
    addresses = subprocess.run(
        ["ip", "netns", "exec", redirector["netns"], "ip", "-4", "-o", "addr", "show", "eth0"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"{redirector['address']}/24" in addresses  # on the site's LAN


@needs_root
def test_a_site_is_a_lan_and_other_sites_are_across_the_wan(site_lab) -> None:
    _, inventory = site_lab
    measured = measure_pair_rtts(inventory.nodes)
    for (src, dst), rtt in measured.items():
        same_site = src.split("-")[0] == dst.split("-")[0]
        target = 0.0 if same_site else WAN_RTT_MS
        assert rtt_within_target(rtt, target), (src, dst, rtt, target)


@needs_root
def test_the_regional_redirector_host_is_across_the_wan_from_every_site(site_lab) -> None:
    _, inventory = site_lab
    assert inventory.redirectors == {
        "regional": {"address": "10.99.226.14", "netns": "tpcsi-regional", "state": "running"}
    }
    for source in ("tpcsi-ucsd-1", "tpcsi-unl-2"):
        pings = subprocess.run(
            ["ip", "netns", "exec", source, "ping", "-c", "5", "-i", "0.2", "-q", "regional"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        average = float(pings.strip().splitlines()[-1].split("=")[1].split("/")[1])
        assert rtt_within_target(average, WAN_RTT_MS), (source, pings)


def _tcpload(netns: str, *args: str) -> list[str]:
    module = [sys.executable, "-m", "orchestrator.lab.tcpload"]
    return ["ip", "netns", "exec", netns, *module, *args]


def _send(netns: str, address: str) -> subprocess.Popen[str]:
    argv = _tcpload(netns, "send", address, "--port", str(TCPLOAD_PORT), "--streams", "4",
                    "--seconds", "5", "--warmup", "2")  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)


def _gbps(process: subprocess.Popen[str]) -> float:
    out, _ = process.communicate(timeout=60)
    result = json.loads(out)
    assert result["error"] is None, result
    return float(result["gbps"])


@needs_root
def test_the_site_uplink_holds_the_aggregate(site_lab) -> None:
    """One ucsd host alone fills about the uplink; two at once share it (the "same network
    link"): their sum stays within the cap, where two separate links would give twice it.
    Medians of three tries, as the machine is shared."""
    _, inventory = site_lab
    targets = [n for n in inventory.nodes if n.site == "unl"]
    servers = [
        subprocess.Popen(
            _tcpload(n.netns or "", "serve", "--bind", n.address, "--port", str(TCPLOAD_PORT)),
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        for n in targets
    ]
    try:
        for server in servers:
            assert server.stdout is not None and "serving" in server.stdout.readline()
        alone, together = [], []
        for _ in range(TRIES):
            alone.append(_gbps(_send("tpcsi-ucsd-1", targets[0].address)))
            both = [_send("tpcsi-ucsd-1", targets[0].address),
                    _send("tpcsi-ucsd-2", targets[1].address)]  # fmt: skip
            together.append(sum(_gbps(p) for p in both))
        print(f"uplink {UPLINK_GBIT} Gbit/s: one host {alone}, two hosts together {together}")
        assert 0.8 * UPLINK_GBIT <= statistics.median(alone) <= 1.05 * UPLINK_GBIT, alone
        assert 0.8 * UPLINK_GBIT <= statistics.median(together) <= 1.05 * UPLINK_GBIT, together
    finally:
        for server in servers:
            server.kill()
            server.wait()


@needs_root
def test_lab_down_removes_every_namespace_route_and_file(site_lab) -> None:
    """Last in this module: it takes the lab down."""
    home, _ = site_lab
    stop_lab(home)
    assert not {n for n in existing_namespaces() if n.startswith("tpcsi-")}
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    assert not any(subnet in routes for subnet in OUR_SUBNETS), routes
    assert not Path("/sys/class/net/tpcsi-h").exists()
    assert not [p for p in Path("/etc/netns").glob("tpcsi-*")]
    assert not inventory_path(home).exists()

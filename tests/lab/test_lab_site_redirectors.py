"""`lab up --sites a:2,b:2 --redirectors regional` runs the redirectors (process runtime):
each site's manager on `<site>-rdr`, its hosts as data servers, a meta-manager on `regional`.
Our tools copy from a host of site a to site b's redirector and land on one of b's data
servers; a name only site a has, asked of the regional redirector, is sent down to a's data
server. Real lab: prefix tpcsr, subnets 10.99.205-208 (205 host, 206 uplinks, 207-208 LANs).
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.errors import UserError
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from orchestrator.lab.inventory import inventory_path, load_inventory
from orchestrator.lab.network import existing_namespaces
from orchestrator.lab.site_servers import cluster_place, redirector_plans
from orchestrator.lab.sites import plan_sites
from orchestrator.lab.topology import NETNS
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.servers.cluster_roles import ClusterPlace, listen_lines
from orchestrator.transfers import HttpsTpc, XrootdTpc
from orchestrator.transfers.base import TransferTool
from orchestrator.transfers.record import TransferRecord
from tests.support.processes import processes_mentioning
from tests.support.running_lab import make_home

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
NETWORK = LabNetwork(prefix="tpcsr", subnet_offset=205)
SIZE = 4 << 20
SERVER_USER = "tpcbench"  # the lab's unprivileged account (orchestrator/lab/preflight.py)


def test_the_cluster_places_of_a_site_lab() -> None:
    layout = plan_sites("a:2,b:2", NETNS, NETWORK, "regional")
    a, b = layout.sites
    assert cluster_place(layout, layout.levels[0]).role == "meta-manager"
    manager = cluster_place(layout, a.redirector)
    assert (manager.role, manager.address, manager.upstream) == (
        "manager", "10.99.207.2", "10.99.206.14:1213"
    )  # fmt: skip
    assert cluster_place(layout, b.hosts[1]).upstream == "10.99.208.2:1213"
    assert b.hosts[0].ports == {"https": 1094, "root": 1094, "gridftp": 2811}
    assert b.redirector.ports == {"https": 1094, "root": 1094}
    assert cluster_place(None, b.hosts[0]).role == "standalone"
    no_level = plan_sites("a:1", NETNS, NETWORK)
    assert cluster_place(no_level, no_level.sites[0].redirector).upstream is None


def test_regional_and_global_make_a_three_level_hierarchy() -> None:
    layout = plan_sites("a:1,b:1", NETNS, NETWORK, "regional,global")
    regional, top = layout.levels
    assert cluster_place(layout, top) == ClusterPlace(
        role="meta-manager", address="10.99.206.18", cms_port=1213
    )
    middle = cluster_place(layout, regional)  # a manager: 5.5.3's meta-manager would not log in
    assert (middle.role, middle.address, middle.upstream) == (
        "manager", "10.99.206.14", "10.99.206.18:1213"
    )  # fmt: skip
    assert cluster_place(layout, layout.sites[1].redirector).upstream == "10.99.206.14:1213"
    assert [p.name for p in redirector_plans(layout)] == ["global", "regional", "a-rdr", "b-rdr"]
    alone = plan_sites("a:1", NETNS, NETWORK, "global")
    assert cluster_place(alone, alone.levels[0]).role == "meta-manager"
    assert cluster_place(alone, alone.sites[0].redirector).upstream == "10.99.206.10:1213"


def test_a_meta_manager_with_an_upstream_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="meta-manager subscribes to no manager"):
        ClusterPlace(role="meta-manager", address="10.0.0.1", cms_port=1213, upstream="g:1213")
    with pytest.raises(ValueError, match="its own cmsd"):
        ClusterPlace(role="manager", address="10.0.0.1", cms_port=1213, upstream="10.0.0.1:1213")
    lines = listen_lines(
        ClusterPlace(role="manager", address="r", cms_port=1213, upstream="g:1213"), 1094, 1094
    )
    assert lines[:3] == ["all.role manager", "all.manager meta g:1213", "all.manager r:1213"]


def test_redirector_nodes_round_trip_apart_from_the_hosts(tmp_path: Path) -> None:
    client = ClientCredentials(cert=tmp_path / "c", key=tmp_path / "k", certdir=tmp_path)
    host = Endpoint(name="b-1", address="10.99.208.11", site="b")
    rdr = Endpoint(name="b-rdr", address="10.99.208.2", site="b", redirector=True)
    inventory = LabInventory(
        nodes=[host], client=client, file_size=1, redirector_nodes=[rdr],
        health={"b-1": {"ok": True}, "b-rdr": {"ok": False}},
    )  # fmt: skip
    data = json.loads(json.dumps(inventory.to_json()))
    assert [n["name"] for n in data["nodes"]] == ["b-1"]
    assert data["redirector_nodes"][0]["redirector"] is True
    back = LabInventory.from_json(data)
    assert back.redirector_nodes == [rdr] and back.nodes == [host]
    assert back.health["b-rdr"] == {"ok": False}
    old = replace(inventory, redirector_nodes=[]).to_json()
    assert "redirector_nodes" not in old
    assert LabInventory.from_json(old).redirector_nodes == []


def test_a_site_lab_in_containers_is_refused_before_anything_starts(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("site labs need netns mode: run as root")
    with pytest.raises(UserError, match="process runtime only"):
        start_lab(tmp_path, network=NETWORK, sites="a:1", mode="netns", runtime="podman")
    assert not (tmp_path / "lab").exists()


@pytest.fixture(scope="module")
def site_lab() -> Iterator[tuple[Path, LabInventory]]:
    if os.geteuid() != 0:
        pytest.fail("a site lab needs network namespaces: run as root")
    home = make_home()
    CertificateAuthority.init(home / "ca")
    try:
        inventory = start_lab(
            home, file_size=SIZE, network=NETWORK, sites="a:2,b:2", redirectors="regional"
        )
        yield home, inventory
    finally:
        stop_lab(home)
        leftovers = sorted(n for n in existing_namespaces() if n.startswith("tpcsr-"))
        processes = processes_mentioning(str(home))
        shutil.rmtree(home, ignore_errors=True)
        assert (leftovers, processes) == ([], []), "lab down left these behind"


def test_the_redirectors_run_and_are_listed_apart(site_lab) -> None:
    home, inventory = site_lab
    assert [n.name for n in inventory.nodes] == ["a-1", "a-2", "b-1", "b-2"]
    assert [(r.name, r.site, r.redirector) for r in inventory.redirector_nodes] == [
        ("regional", None, True), ("a-rdr", "a", True), ("b-rdr", "b", True)
    ]  # fmt: skip
    for name in ("regional", "a-rdr", "b-rdr"):
        assert inventory.health[name]["ok"], inventory.health[name]
        assert inventory.health[name]["checks"]["https_redirect"] == "ok"
    saved = load_inventory(inventory_path(home))
    assert saved.redirector_nodes == inventory.redirector_nodes
    assert saved.sites["b"]["redirector"]["state"] == "running"
    assert saved.redirectors["regional"]["state"] == "running"
    env = {**os.environ, "TPCBENCH_HOME": str(home)}
    status = subprocess.run(
        [sys.executable, "-m", "orchestrator", "lab", "status"],
        capture_output=True, text=True, env=env, cwd=REPO, check=True,
    ).stdout  # fmt: skip
    assert "b-rdr 10.99.208.2 running" in status
    assert "redirector level regional: 10.99.206.14 running" in status


def _node(inventory: LabInventory, name: str) -> Endpoint:
    return next(e for e in [*inventory.nodes, *inventory.redirector_nodes] if e.name == name)


def _copy(inventory: LabInventory, tool: TransferTool, protocol: str, name: str) -> TransferRecord:
    src, dst = _node(inventory, "a-1"), _node(inventory, "b-rdr")
    request = MeasurementRequest.between(src, dst, protocol, 2, transfers=1, file_size=SIZE)
    transfer = request.transfer_request(str(uuid.uuid4()), 0, inventory.client, timeout=120)
    transfer = replace(transfer, dst_path=name)
    return asyncio.run(tool.copy(transfer))


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_a_copy_to_site_b_lands_on_one_of_its_data_servers(site_lab, protocol: str) -> None:
    _, inventory = site_lab
    name = f"/tpcbench-to-site-b-{protocol}"
    tool = HttpsTpc("pull") if protocol == "https" else XrootdTpc()
    record = _copy(inventory, tool, protocol, name)
    assert record.succeeded, record.message
    holders = [
        n for n in inventory.nodes if (Path(n.data_root) / name.lstrip("/")).exists()
    ]  # fmt: skip
    assert [n.site for n in holders] == ["b"]
    (holder,) = holders
    source = Path(_node(inventory, "a-1").data_root) / source_name(SIZE).lstrip("/")
    assert (Path(holder.data_root) / name.lstrip("/")).read_bytes() == source.read_bytes()
    assert record.redirects >= 1
    assert record.destination_server is not None
    server_host = record.destination_server.rpartition(":")[0]
    assert server_host in (holder.name, holder.address), record.destination_server
    phases = list(record.phases)
    assert record.phases["redirect"] > 0, record.phases
    assert phases.index("redirect") < phases.index("streaming"), phases


def test_the_regional_redirector_sends_a_lookup_down_to_site_a(site_lab) -> None:
    _, inventory = site_lab
    name = "tpcbench-only-at-a"
    holder = _node(inventory, "a-2")
    path = Path(holder.data_root) / name
    path.write_bytes(b"site a only\n")
    user = pwd.getpwnam(SERVER_USER)
    os.chown(path, user.pw_uid, user.pw_gid)
    client = inventory.client
    context = ssl.create_default_context(capath=str(client.certdir))
    context.load_cert_chain(str(client.cert), str(client.key))
    regional = _node(inventory, "regional")
    url = f"https://{regional.address}:{regional.ports['https']}/{name}"
    with httpx.Client(verify=context, timeout=30, follow_redirects=True) as http:
        response = http.get(url)
    assert response.status_code == 200 and response.content == b"site a only\n"
    assert len(response.history) >= 1
    assert urlsplit(str(response.url)).hostname in (holder.name, holder.address)

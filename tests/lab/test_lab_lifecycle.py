"""`lab down` stops every process it started and removes namespaces and data; twice is fine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.errors import UserError
from orchestrator.lab import LabNetwork, load_inventory, start_lab, stop_lab
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.network import ETC_NETNS, TCP_SYSCTLS, existing_namespaces
from orchestrator.lab.processes import group_members
from tests.support.running_lab import make_home

pytestmark = pytest.mark.lab
NETWORK = LabNetwork(prefix="tpcbl", subnet_offset=210, base_port=24000)


def net_namespace(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def test_lab_down_leaves_no_process_namespace_or_data() -> None:
    home = make_home()
    try:
        CertificateAuthority.init(home / "ca")
        inventory = start_lab(home, 2, 1 << 20, network=NETWORK)
        record = json.loads((home / "lab" / "run.json").read_text())
        pids = [p["pid"] for p in record["processes"]]
        assert len(pids) == 4  # xrootd and gridftp on each node
        for pid in pids:
            assert os.stat(f"/proc/{pid}").st_uid != 0  # servers never run as root
            assert group_members(pid)
        data_roots = [Path(n.data_root) for n in inventory.nodes]
        assert all(root.is_dir() for root in data_roots)
        if os.geteuid() == 0:
            # each node serves from its own namespace, not the host's
            namespaces = {net_namespace(pid) for pid in pids}
            assert len(namespaces) == 2 and net_namespace(os.getpid()) not in namespaces
            assert {n.netns for n in inventory.nodes} <= existing_namespaces()

        issuer = record["token_issuer"]["pid"]
        assert group_members(issuer)

        stopped = stop_lab(home)

        # xrootd and gridftp on each node, and the token issuer
        assert sum(line.startswith("stopped") for line in stopped) == 5
        assert f"stopped the token issuer (pid {issuer})" in stopped
        assert all(group_members(pid) == [] for pid in [*pids, issuer])
        assert not any(root.exists() for root in data_roots)
        if os.geteuid() == 0:
            assert not {n for n in existing_namespaces() if n.startswith("tpcbl-")}
            assert not list(ETC_NETNS.glob("tpcbl-*"))
            assert not Path("/sys/class/net/tpcbl-h").exists()
            routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
            assert "10.99.211." not in routes
        with pytest.raises(UserError, match="no lab is running"):
            load_inventory(home / "lab" / "inventory.json")
        assert stop_lab(home) == []  # idempotent
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


def test_a_failed_start_cleans_up_after_itself() -> None:
    home = make_home()
    try:
        CertificateAuthority.init(home / "ca")
        # a file where the node's data directory must go makes the start fail midway
        network = LabNetwork(prefix="tpcbf", subnet_offset=215, base_port=24500)
        blocker = lab_data_dir("tpcbf")
        blocker.parent.mkdir(parents=True, exist_ok=True)
        blocker.write_text("in the way")
        with pytest.raises(UserError, match="rolled back"):
            start_lab(home, 1, 1 << 20, network=network)
        blocker.unlink()
        assert not (home / "lab" / "run.json").exists()
        if os.geteuid() == 0:
            assert not {n for n in existing_namespaces() if n.startswith("tpcbf-")}
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_rate_caps_each_link_and_tcp_buffers_are_set_per_node() -> None:
    home = make_home()
    network = LabNetwork(prefix="tpcbr", subnet_offset=240)
    try:
        CertificateAuthority.init(home / "ca")
        inventory = start_lab(home, 1, 1 << 20, rate_gbit=2.5, network=network)
        assert inventory.nodes[0].link_gbps == 2.5
        qdisc = subprocess.run(
            ["ip", "netns", "exec", "tpcbr-router", "tc", "qdisc", "show", "dev", "n1"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "tbf" in qdisc and "rate 2500Mbit" in qdisc
        for key, value in TCP_SYSCTLS.items():
            shown = subprocess.run(
                ["ip", "netns", "exec", "tpcbr-lab-1", "sysctl", "-n", key],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            assert shown.split() == value.split()
        # the router forwards (routing, not bridging): node -> host goes through it
        forwarding = subprocess.run(
            ["ip", "netns", "exec", "tpcbr-router", "sysctl", "-n", "net.ipv4.ip_forward"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert forwarding.strip() == "1"
        # nothing routes beyond the lab: no default route in a node or the router
        for namespace in ("tpcbr-lab-1", "tpcbr-router"):
            routes = subprocess.run(
                ["ip", "netns", "exec", namespace, "ip", "route"],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            assert "default" not in routes
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)

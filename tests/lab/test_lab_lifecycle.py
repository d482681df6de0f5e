"""`lab down` stops every process it started and removes namespaces and data; twice is fine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from running_lab import make_home

from ca.authority import CertificateAuthority
from orchestrator.errors import UserError
from orchestrator.lab import LabNetwork, load_inventory, start_lab, stop_lab
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.network import ETC_NETNS, existing_namespaces
from orchestrator.lab.processes import group_members

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

        stopped = stop_lab(home)

        assert sum(line.startswith("stopped") for line in stopped) == 4
        assert all(group_members(pid) == [] for pid in pids)
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

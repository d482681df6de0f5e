"""Address and port planning for both lab layouts (pure, no servers)."""

from __future__ import annotations

import pytest

from orchestrator.errors import UserError
from orchestrator.lab.topology import LOOPBACK, NETNS, LabNetwork, all_ports, plan_nodes


def test_netns_nodes_share_well_known_ports_on_their_own_subnets() -> None:
    plans = plan_nodes(3, NETNS, LabNetwork(prefix="tpcb", subnet_offset=0))
    assert [p.address for p in plans] == ["10.99.1.2", "10.99.2.2", "10.99.3.2"]
    assert [p.gateway for p in plans] == ["10.99.1.1", "10.99.2.1", "10.99.3.1"]
    assert [p.netns for p in plans] == ["tpcb-lab-1", "tpcb-lab-2", "tpcb-lab-3"]
    assert all(p.ports == {"https": 8443, "root": 1094, "gridftp": 2811} for p in plans)


def test_subnet_offset_moves_every_node() -> None:
    plans = plan_nodes(2, NETNS, LabNetwork(prefix="tpcbt", subnet_offset=200))
    assert [p.subnet for p in plans] == ["10.99.201.0/24", "10.99.202.0/24"]
    assert LabNetwork(subnet_offset=200).host_address == "10.99.200.1"


def test_loopback_ports_never_overlap_between_nodes() -> None:
    plans = plan_nodes(20, LOOPBACK, LabNetwork(base_port=21000))
    assert {p.address for p in plans} == {"127.0.0.1"}
    ports = [port for p in plans for port in all_ports(p)]
    assert len(ports) == len(set(ports))
    assert plans[0].ports == {"root": 21000, "https": 21001, "gridftp": 21002}
    assert plans[1].ports == {"root": 21010, "https": 21011, "gridftp": 21012}
    assert plans[0].data_ports == (22000, 22099)


@pytest.mark.parametrize(
    ("nodes", "network", "message"),
    [
        (0, LabNetwork(), "--nodes must be between 1"),
        (3, LabNetwork(prefix="Bad-Prefix"), "not usable"),
        (3, LabNetwork(prefix="waytoolongprefix"), "not usable"),
        (10, LabNetwork(subnet_offset=250), "no room for 10 nodes"),
        (3, LabNetwork(base_port=80), "does not fit"),
        (3, LabNetwork(base_port=65000), "does not fit"),
    ],
)
def test_bad_plans_are_refused_with_a_hint(nodes: int, network: LabNetwork, message: str) -> None:
    with pytest.raises(UserError, match=message):
        plan_nodes(nodes, LOOPBACK, network)


def test_environment_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TPCBENCH_LAB_PREFIX", "mine")
    monkeypatch.setenv("TPCBENCH_LAB_SUBNET_OFFSET", "40")
    monkeypatch.setenv("TPCBENCH_LAB_BASE_PORT", "30000")
    assert LabNetwork.from_environment() == LabNetwork("mine", 40, 30000)
    monkeypatch.setenv("TPCBENCH_LAB_SUBNET_OFFSET", "x")
    with pytest.raises(UserError, match="whole numbers"):
        LabNetwork.from_environment()

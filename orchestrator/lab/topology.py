"""Who gets which address and ports: pure planning, no side effects.

netns mode (root): node i lives in namespace `<prefix>-lab-<i>` at 10.99.<offset+i>.2 behind
one router namespace; every node serves the well-known ports, like host-network pods.
loopback mode (no root): all nodes on 127.0.0.1, each with its own block of ports.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from orchestrator.endpoints import DEFAULT_PORTS
from orchestrator.errors import UserError

NETNS = "netns"
LOOPBACK = "loopback"
MODES = (NETNS, LOOPBACK)

DEFAULT_PREFIX = "tpcb"
MAX_NODES = 50
NETNS_DATA_PORTS = (20000, 20999)  # the same range in every namespace
LOOPBACK_BASE_PORT = 21000
LOOPBACK_PORTS_PER_NODE = 10  # root, https, gridftp, then room to grow
LOOPBACK_DATA_PORTS_PER_NODE = 100  # one passive port per concurrent GridFTP transfer
_PREFIX_PATTERN = re.compile(r"^[a-z][a-z0-9]{0,7}$")  # keeps "<prefix>-h" a valid ifname


@dataclass(frozen=True)
class LabNetwork:
    """Names and addresses one lab owns; a second lab needs another prefix and offset."""

    prefix: str = DEFAULT_PREFIX
    subnet_offset: int = 0  # third octet of the host<->router link; node i uses offset+i
    base_port: int = LOOPBACK_BASE_PORT  # loopback mode only

    @classmethod
    def from_environment(cls) -> LabNetwork:
        """Overrides for tests and side-by-side labs: TPCBENCH_LAB_PREFIX, ..._SUBNET_OFFSET."""
        prefix = os.environ.get("TPCBENCH_LAB_PREFIX", DEFAULT_PREFIX)
        offset = os.environ.get("TPCBENCH_LAB_SUBNET_OFFSET", "0")
        base = os.environ.get("TPCBENCH_LAB_BASE_PORT", str(LOOPBACK_BASE_PORT))
        if not offset.isdigit() or not base.isdigit():
            raise UserError(
                "TPCBENCH_LAB_SUBNET_OFFSET and TPCBENCH_LAB_BASE_PORT must be whole numbers"
            )
        return cls(prefix=prefix, subnet_offset=int(offset), base_port=int(base))

    def validate(self, nodes: int) -> None:
        if not _PREFIX_PATTERN.match(self.prefix):
            raise UserError(
                f"lab prefix {self.prefix!r} is not usable; use 1-8 lowercase letters/digits"
            )
        if not 1 <= nodes <= MAX_NODES:
            raise UserError(f"--nodes must be between 1 and {MAX_NODES}, not {nodes}")
        if self.subnet_offset < 0 or self.subnet_offset + nodes > 254:
            raise UserError(
                f"subnet offset {self.subnet_offset} leaves no room for {nodes} nodes in "
                "10.99.0.0/16; pick an offset between 0 and " + str(254 - nodes)
            )
        highest = self.base_port + 1000 + nodes * LOOPBACK_DATA_PORTS_PER_NODE
        if self.base_port < 1024 or highest > 65535:
            raise UserError(
                f"base port {self.base_port} does not fit {nodes} nodes; "
                f"pick one between 1024 and {65535 - 1000 - nodes * LOOPBACK_DATA_PORTS_PER_NODE}"
            )

    @property
    def router_namespace(self) -> str:
        return f"{self.prefix}-router"

    @property
    def host_interface(self) -> str:
        return f"{self.prefix}-h"

    @property
    def host_address(self) -> str:
        return f"10.99.{self.subnet_offset}.1"

    @property
    def router_uplink_address(self) -> str:
        return f"10.99.{self.subnet_offset}.2"


@dataclass(frozen=True)
class NodePlan:
    """One node's identity on the network."""

    index: int
    name: str
    address: str
    ports: dict[str, int]
    data_ports: tuple[int, int]
    netns: str | None = None
    router_interface: str | None = None  # the router's end of this node's link
    gateway: str | None = None  # the router's address on this node's link
    subnet: str | None = None
    dns_names: list[str] = field(default_factory=list)
    site: str | None = None  # `lab up --sites`: the site whose LAN the node is on (sites.py)


def node_name(index: int) -> str:
    return f"lab-{index}"


def plan_nodes(count: int, mode: str, network: LabNetwork) -> list[NodePlan]:
    """Addresses and ports for `count` nodes; see the module docstring for the two layouts."""
    network.validate(count)
    if mode == NETNS:
        return [_netns_node(i, network) for i in range(1, count + 1)]
    if mode == LOOPBACK:
        return [_loopback_node(i, network) for i in range(1, count + 1)]
    raise UserError(f"unknown lab mode {mode!r}; use one of: {', '.join(MODES)}")


def _netns_node(index: int, network: LabNetwork) -> NodePlan:
    octet = network.subnet_offset + index
    return NodePlan(
        index=index,
        name=node_name(index),
        address=f"10.99.{octet}.2",
        ports=dict(DEFAULT_PORTS),
        data_ports=NETNS_DATA_PORTS,
        netns=f"{network.prefix}-lab-{index}",
        router_interface=f"n{index}",
        gateway=f"10.99.{octet}.1",
        subnet=f"10.99.{octet}.0/24",
        dns_names=[node_name(index)],
    )


def _loopback_node(index: int, network: LabNetwork) -> NodePlan:
    first = network.base_port + (index - 1) * LOOPBACK_PORTS_PER_NODE
    data_low = network.base_port + 1000 + (index - 1) * LOOPBACK_DATA_PORTS_PER_NODE
    return NodePlan(
        index=index,
        name=node_name(index),
        address="127.0.0.1",
        ports={"root": first, "https": first + 1, "gridftp": first + 2},
        data_ports=(data_low, data_low + LOOPBACK_DATA_PORTS_PER_NODE - 1),
        dns_names=[node_name(index), "localhost"],
    )


def all_ports(plan: NodePlan) -> list[int]:
    """Every TCP port a node listens on or accepts data connections on."""
    low, high = plan.data_ports
    return [*plan.ports.values(), *range(low, high + 1)]

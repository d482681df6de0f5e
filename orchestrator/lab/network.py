"""Network namespaces for netns mode: a star of nodes around one router namespace.

The router routes (ip_forward=1, no bridge) so the per-pair WAN delay sits on its FORWARD
path (wan.py). Nothing routes beyond 10.99.0.0/16: namespaces get no default route and an
empty resolv.conf, so no packet from the lab leaves the machine.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import LabNetwork, NodePlan
from orchestrator.lab.wan_profile import TcpSettings

ETC_NETNS = Path("/etc/netns")  # `ip netns exec` bind-mounts these files over /etc
LAB_SUPERNET = "10.99.0.0/16"
# Window scaling follows the buffer maxima, so set them (and the congestion control) rather
# than inherit the host's; these are the defaults, `lab up --tcp-buffer/--congestion-control`.
TCP_SYSCTLS = TcpSettings().sysctls()
TBF_BURST = "256kb"
# Jumbo frames on the node links, as ESnet's fasterdata advises for data-transfer nodes. With
# 1500-byte frames the WAN's delay program forwards ~6x the packets per byte, each released
# packet's forwarding and delivery running in its own verdict call: at 88 streams (a TPC
# measurement's 11 x 8, and the link baseline's) on 2 cores it fell behind the link (a 1
# Gbit/s cap read 0.73-0.81 Gbit/s at 10 and 60 ms); at 9000 it reads the cap. The host's
# uplink stays 1500: TCP's MSS takes the smaller end.
LINK_MTU = 9000
TBF_LATENCY = "50ms"


def run(argv: Sequence[str]) -> str:
    """Run a network command; a failure becomes a one-line UserError."""
    result = subprocess.run(list(argv), capture_output=True, text=True)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise UserError(f"`{' '.join(argv)}` failed: {detail[-1] if detail else 'no output'}")
    return result.stdout


def in_namespace(namespace: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, *argv]


def existing_namespaces() -> set[str]:
    output = run(["ip", "netns", "list"])
    return {line.split()[0] for line in output.splitlines() if line.strip()}


def listeners_in(namespace: str | None, ports: Sequence[int]) -> dict[int, str]:
    """Which of `ports` something listens on (in `namespace`, or on the host): port -> who."""
    argv = ["ss", "-Hltnp"]
    output = run(in_namespace(namespace, *argv) if namespace else argv)
    wanted = set(ports)
    found: dict[int, str] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        port = parts[3].rsplit(":", 1)[-1]
        if port.isdigit() and int(port) in wanted:
            found[int(port)] = parts[5] if len(parts) > 5 else "another process"
    return found


def host_routes_overlapping(plans: Sequence[NodePlan], network: LabNetwork) -> list[str]:
    """Host routes already covering our subnets: someone else's network would be in the way."""
    ours = {p.subnet for p in plans} | {f"10.99.{network.subnet_offset}.0/24"}
    output = run(["ip", "-4", "route", "show"])
    return [line for line in output.splitlines() if line.split()[0] in ours]


def check_netns_free(plans: Sequence[NodePlan], network: LabNetwork) -> None:
    present = existing_namespaces()
    for plan in plans:
        if plan.netns not in present:
            continue
        taken = listeners_in(plan.netns, list(plan.ports.values()))
        if taken:
            port, who = next(iter(taken.items()))
            raise UserError(
                f"port {port} in network namespace {plan.netns} is already taken by {who}; "
                f"stop it, or remove the namespace with: ip netns del {plan.netns}"
            )
        raise UserError(
            f"network namespace {plan.netns} already exists (left over?); remove it with: "
            f"ip netns del {plan.netns}, or set TPCBENCH_LAB_PREFIX to another prefix"
        )
    if network.router_namespace in present:
        raise UserError(
            f"network namespace {network.router_namespace} already exists (left over?); "
            f"remove it with: ip netns del {network.router_namespace}"
        )
    overlapping = host_routes_overlapping(plans, network)
    if overlapping:
        raise UserError(
            f"this host already routes the lab's subnet ({overlapping[0].strip()}); remove "
            "that route, or pick another range with TPCBENCH_LAB_SUBNET_OFFSET=<0-250>"
        )


def create_network(
    record: LabRun,
    plans: Sequence[NodePlan],
    network: LabNetwork,
    rate_gbit: float | None,
    tcp: TcpSettings | None = None,
) -> None:
    """Router namespace, one namespace per node, host link; recorded before each step."""
    tcp = tcp or TcpSettings()
    router = network.router_namespace
    create_router(record, network)
    hosts_file = hosts_file_for(plans)
    for plan in plans:
        assert plan.netns and plan.router_interface and plan.gateway and plan.subnet
        add_namespace(record, plan.netns)
        write_etc_netns(record, plan, hosts_file)
        rif = plan.router_interface
        veth = ["type", "veth", "peer", "name", "eth0", "netns", plan.netns]
        run(["ip", "link", "add", rif, "netns", router, *veth])
        run(in_namespace(router, "ip", "addr", "add", f"{plan.gateway}/24", "dev", rif))
        run(in_namespace(router, "ip", "link", "set", rif, "mtu", str(LINK_MTU), "up"))
        run(in_namespace(plan.netns, "ip", "addr", "add", f"{plan.address}/24", "dev", "eth0"))
        run(in_namespace(plan.netns, "ip", "link", "set", "eth0", "mtu", str(LINK_MTU), "up"))
        run(in_namespace(plan.netns, "ip", "route", "add", LAB_SUPERNET, "via", plan.gateway))
        settings = [f"{key}={value}" for key, value in tcp.sysctls().items()]
        run(in_namespace(plan.netns, "sysctl", "-qw", *settings))
        run(["ip", "route", "add", plan.subnet, "via", network.router_uplink_address])
        if rate_gbit:
            # egress towards the node: the node's inbound capacity, like a NIC's line rate
            tbf = ["tbf", "rate", f"{rate_gbit}gbit", "burst", TBF_BURST, "latency", TBF_LATENCY]
            run(in_namespace(router, "tc", "qdisc", "replace", "dev", rif, "root", *tbf))


def create_router(record: LabRun, network: LabNetwork) -> None:
    """The router namespace (forwarding) and the host's link to it."""
    router = network.router_namespace
    add_namespace(record, router)
    run(in_namespace(router, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
    host_if = network.host_interface
    record.host_interfaces.append(host_if)
    record.save()
    run(["ip", "link", "add", host_if, "type", "veth", "peer", "name", "uplink", "netns", router])
    run(["ip", "addr", "add", f"{network.host_address}/24", "dev", host_if])
    run(["ip", "link", "set", host_if, "up"])
    run(
        in_namespace(
            router, "ip", "addr", "add", f"{network.router_uplink_address}/24", "dev", "uplink"
        )
    )
    run(in_namespace(router, "ip", "link", "set", "uplink", "up"))


def add_namespace(record: LabRun, name: str) -> None:
    record.namespaces.append(name)
    record.save()
    run(["ip", "netns", "add", name])
    run(in_namespace(name, "ip", "link", "set", "lo", "up"))


def hosts_file_for(plans: Sequence[NodePlan]) -> str:
    return "127.0.0.1 localhost\n" + "".join(f"{p.address} {p.name}\n" for p in plans)


def write_etc_netns(record: LabRun, plan: NodePlan, hosts_file: str) -> None:
    """Per-namespace /etc/hosts and an empty resolv.conf: names resolve without any DNS."""
    assert plan.netns
    folder = ETC_NETNS / plan.netns
    record.etc_netns_dirs.append(str(folder))
    record.save()
    folder.mkdir(parents=True, exist_ok=True)
    # xrootd refuses to start unless the machine's hostname resolves; make it the node.
    own = f"{plan.address} {plan.name}\n"
    lines = hosts_file.replace(own, f"{plan.address} {plan.name} {socket.gethostname()}\n")
    (folder / "hosts").write_text(lines)
    (folder / "resolv.conf").write_text("# tpc-bench lab: no DNS inside the lab\n")


def destroy_network(record: LabRun) -> list[str]:
    """Remove what `create_network` made; return what could not be removed."""
    problems = []
    present = existing_namespaces()
    for name in reversed(record.namespaces):
        if name in present:
            result = subprocess.run(["ip", "netns", "del", name], capture_output=True, text=True)
            if result.returncode != 0:
                problems.append(f"namespace {name}: {result.stderr.strip()}")
    for interface in record.host_interfaces:
        if Path(f"/sys/class/net/{interface}").exists():
            subprocess.run(["ip", "link", "del", interface], capture_output=True)
    for folder in record.etc_netns_dirs:
        shutil.rmtree(folder, ignore_errors=True)
    left = existing_namespaces() & set(record.namespaces)
    problems.extend(f"namespace {name} still exists" for name in sorted(left))
    return problems

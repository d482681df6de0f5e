"""The namespaces of a site lab (`lab up --sites`, layout in sites.py) and their WAN delay.

Each site: a router namespace with a bridge (the site's LAN) and one uplink to the lab's WAN
router. `--site-link-gbit` puts a tbf on both ends of the uplink (the WAN router's egress into
the site, the site router's egress out of it), so every host of the site shares the capacity
both ways. `--link-capacity` caps each host's own link (the bridge port's egress towards it).
The delay program runs in the WAN router as in a node lab, one NFQUEUE queue per ordered site
pair, matched on the two LANs, so traffic within a site is never delayed.
"""

from __future__ import annotations

from orchestrator.errors import UserError
from orchestrator.lab.network import (
    LAB_SUPERNET,
    LINK_MTU,
    TBF_BURST,
    TBF_LATENCY,
    add_namespace,
    create_router,
    existing_namespaces,
    hosts_file_for,
    in_namespace,
    run,
    write_etc_netns,
)
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.sites import SiteLayout, SitePlan, site_matrix
from orchestrator.lab.topology import LabNetwork, NodePlan
from orchestrator.lab.wan import start_delay_line
from orchestrator.lab.wan_profile import RttMatrix, TcpSettings

LAN_BRIDGE = "lan"
UPLINK = "wan"  # the site router's end of its uplink


def create_site_network(
    record: LabRun,
    layout: SiteLayout,
    network: LabNetwork,
    host_gbit: float | None,
    uplink_gbit: float | None,
    tcp: TcpSettings,
) -> None:
    """The WAN router, every site's router, LAN and uplink, and every host and redirector
    namespace on its site's LAN; each step recorded first, so `lab down` undoes a partial one."""
    create_router(record, network)
    transit = layout.subnets()[0]  # the uplinks' /24: the host reaches the levels through it
    run(["ip", "route", "add", transit, "via", network.router_uplink_address])
    hosts_file = hosts_file_for(layout.all_members())
    for level in layout.levels:
        _join_wan(record, network, level, hosts_file, tcp)
    for site in layout.sites:
        _create_site(record, site, network, uplink_gbit)
        for member in (*site.hosts, site.redirector):
            _join_lan(record, site, member, hosts_file, tcp)
            if host_gbit and member in site.hosts:
                _shape(site.router_namespace, member.router_interface or "", host_gbit)


def _create_site(
    record: LabRun, site: SitePlan, network: LabNetwork, uplink_gbit: float | None
) -> None:
    router, gw = network.router_namespace, site.router_namespace
    add_namespace(record, gw)
    run(in_namespace(gw, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
    run(in_namespace(gw, "ip", "link", "add", LAN_BRIDGE, "type", "bridge"))
    run(in_namespace(gw, "ip", "addr", "add", f"{site.gateway}/24", "dev", LAN_BRIDGE))
    run(in_namespace(gw, "ip", "link", "set", LAN_BRIDGE, "mtu", str(LINK_MTU), "up"))
    wan_if = site.wan_interface
    veth = ["type", "veth", "peer", "name", UPLINK, "netns", gw]
    run(["ip", "link", "add", wan_if, "netns", router, *veth])
    run(in_namespace(router, "ip", "addr", "add", f"{site.wan_address}/30", "dev", wan_if))
    run(in_namespace(router, "ip", "link", "set", wan_if, "mtu", str(LINK_MTU), "up"))
    run(in_namespace(gw, "ip", "addr", "add", f"{site.uplink_address}/30", "dev", UPLINK))
    run(in_namespace(gw, "ip", "link", "set", UPLINK, "mtu", str(LINK_MTU), "up"))
    run(in_namespace(gw, "ip", "route", "add", LAB_SUPERNET, "via", site.wan_address))
    run(in_namespace(router, "ip", "route", "add", site.lan, "via", site.uplink_address))
    run(["ip", "route", "add", site.lan, "via", network.router_uplink_address])
    if uplink_gbit:  # one capacity for the site, shared by its hosts, in and out
        _shape(router, wan_if, uplink_gbit)
        _shape(gw, UPLINK, uplink_gbit)


def _join_lan(
    record: LabRun, site: SitePlan, member: NodePlan, hosts_file: str, tcp: TcpSettings
) -> None:
    assert member.netns and member.router_interface
    gw, port = site.router_namespace, member.router_interface
    add_namespace(record, member.netns)
    write_etc_netns(record, member, hosts_file)
    run(["ip", "link", "add", port, "netns", gw, "type", "veth", "peer", "name", "eth0",
         "netns", member.netns])  # fmt: skip
    run(in_namespace(gw, "ip", "link", "set", port, "master", LAN_BRIDGE))
    run(in_namespace(gw, "ip", "link", "set", port, "mtu", str(LINK_MTU), "up"))
    ns = member.netns
    run(in_namespace(ns, "ip", "addr", "add", f"{member.address}/24", "dev", "eth0"))
    run(in_namespace(ns, "ip", "link", "set", "eth0", "mtu", str(LINK_MTU), "up"))
    run(in_namespace(ns, "ip", "route", "add", LAB_SUPERNET, "via", site.gateway))
    settings = [f"{key}={value}" for key, value in tcp.sysctls().items()]
    run(in_namespace(ns, "sysctl", "-qw", *settings))


def _join_wan(
    record: LabRun, network: LabNetwork, level: NodePlan, hosts_file: str, tcp: TcpSettings
) -> None:
    """A redirector level's host (regional, global): its own /30 link to the WAN router."""
    assert level.netns and level.router_interface and level.gateway
    router, ns, port = network.router_namespace, level.netns, level.router_interface
    add_namespace(record, ns)
    write_etc_netns(record, level, hosts_file)
    run(["ip", "link", "add", port, "netns", router, "type", "veth", "peer", "name", "eth0",
         "netns", ns])  # fmt: skip
    run(in_namespace(router, "ip", "addr", "add", f"{level.gateway}/30", "dev", port))
    run(in_namespace(router, "ip", "link", "set", port, "mtu", str(LINK_MTU), "up"))
    run(in_namespace(ns, "ip", "addr", "add", f"{level.address}/30", "dev", "eth0"))
    run(in_namespace(ns, "ip", "link", "set", "eth0", "mtu", str(LINK_MTU), "up"))
    run(in_namespace(ns, "ip", "route", "add", LAB_SUPERNET, "via", level.gateway))
    settings = [f"{key}={value}" for key, value in tcp.sysctls().items()]
    run(in_namespace(ns, "sysctl", "-qw", *settings))


def _shape(namespace: str, interface: str, gbit: float) -> None:
    tbf = ["tbf", "rate", f"{gbit}gbit", "burst", TBF_BURST, "latency", TBF_LATENCY]
    run(in_namespace(namespace, "tc", "qdisc", "replace", "dev", interface, "root", *tbf))


def start_site_wan(
    record: LabRun, layout: SiteLayout, network: LabNetwork, between: RttMatrix
) -> None:
    """The delay program in the WAN router: queue 100a+b holds place a's packets for place b
    for half their RTT; a place is a site (its whole LAN, so its reserved redirector is
    delayed too) or a redirector level (its host)."""
    places = [(s.index, s.name, s.lan) for s in layout.sites]
    places += [(level.index, level.name, f"{level.address}/32") for level in layout.levels]
    queues: dict[int, float] = {}
    rules: list[tuple[str, str, int]] = []
    for a, a_name, a_net in places:
        for b, b_name, b_net in places:
            rtt = between.target(a_name, b_name) if a != b else 0.0
            if rtt > 0:
                queues[100 * a + b] = rtt / 2
                rules.append((a_net, b_net, 100 * a + b))
    start_delay_line(record, network, queues, rules)


def check_sites_free(layout: SiteLayout, network: LabNetwork) -> None:
    """No namespace or host route of this layout exists yet (a lab left over, or another's)."""
    present = existing_namespaces()
    for name in [network.router_namespace, *layout.namespaces()]:
        if name in present:
            raise UserError(
                f"network namespace {name} already exists (left over?); remove it with: "
                f"ip netns del {name}, or set TPCBENCH_LAB_PREFIX to another prefix"
            )
    ours = {*layout.subnets(), f"10.99.{network.subnet_offset}.0/24"}
    taken = [line for line in run(["ip", "-4", "route", "show"]).splitlines()
             if line.split()[0] in ours]  # fmt: skip
    if taken:
        raise UserError(
            f"this host already routes the lab's subnet ({taken[0].strip()}); remove that "
            "route, or pick another range with TPCBENCH_LAB_SUBNET_OFFSET"
        )


def build_sites(
    record: LabRun,
    layout: SiteLayout,
    network: LabNetwork,
    host_gbit: float | None,
    uplink_gbit: float | None,
    tcp: TcpSettings,
    rtt: str | None,
) -> None:
    """The whole site network, then the WAN delay between sites when `rtt` asks for one."""
    create_site_network(record, layout, network, host_gbit, uplink_gbit, tcp)
    if rtt is not None:
        start_site_wan(record, layout, network, site_matrix(rtt, layout.places))

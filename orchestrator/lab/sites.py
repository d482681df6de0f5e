"""Sites of several hosts behind one uplink each: pure planning, no side effects.

`lab up --sites ucsd:3,unl:2` (netns mode only). With S sites and subnet offset o:

    10.99.o.0/24        host <-> WAN router link (as in a node lab)
    10.99.(o+1).0/24    uplinks: site s's router has 10.99.(o+1).(4s+2)/30, the WAN router
                        10.99.(o+1).(4s+1)/30 on its interface s<s>; with --redirectors,
                        each level k (regional, global) follows the sites the same way:
                        its host 10.99.(o+1).(4k+2), the WAN router .(4k+1) on r<k>
    10.99.(o+1+s).0/24  site s's LAN, a bridge in the site's router namespace:
                        .1 the site router, .2 the redirector host <site>-rdr,
                        .(10+i) data-server host <site>-<i>

Namespaces: `<prefix>-router` (the WAN router, where the delay program runs),
`<prefix>-<site>-gw` (the site's router: its LAN bridge and its one uplink, shaped to the
site's capacity both ways), `<prefix>-<site>-<i>` (hosts), `<prefix>-<site>-rdr` (the site's
XRootD manager, on the LAN) and `<prefix>-regional` / `<prefix>-global` (on their own links to
the WAN router). The top level given runs the meta-manager; with both, `regional` is a manager
subscribed to `global`, and the site managers subscribe to the lowest level given
(site_servers.py, servers/cluster_roles.py). Site hosts' XRootD runs as data servers of their
site's manager, so it serves HTTPS on its xroot port (CLUSTER_PORTS).
Hosts of a site talk over the bridge (no WAN delay, no uplink); traffic between sites, or
between a site and a level, crosses the WAN router, which delays it by the pair's RTT.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.endpoints import DEFAULT_PORTS, SITE_NAME
from orchestrator.errors import UserError
from orchestrator.lab.topology import NETNS, NETNS_DATA_PORTS, LabNetwork, NodePlan
from orchestrator.lab.wan_profile import PROFILES, RttMatrix, derived_rtt_ms, rtt_matrix

MAX_SITES = 20
MAX_HOSTS_PER_SITE = 50
FIRST_HOST_OCTET = 10
REDIRECTOR_OCTET = 2
LEVELS = ("regional", "global")  # redirectors above the sites' own, `--redirectors`
# A clustered XRootD serves HTTPS on its xroot port: a redirect names that one port.
CLUSTER_PORTS = {**DEFAULT_PORTS, "https": DEFAULT_PORTS["root"]}
REDIRECTOR_PORTS = {"https": DEFAULT_PORTS["root"], "root": DEFAULT_PORTS["root"]}
CMS_PORT = 1213  # a redirector's cmsd, which the nodes below it log in to


@dataclass(frozen=True)
class SitePlan:
    """One site: its name, hosts, reserved redirector and the addresses of its uplink."""

    index: int  # 1.. in the order given
    name: str
    hosts: tuple[NodePlan, ...]
    redirector: NodePlan  # the site's XRootD manager (site_servers.py)
    router_namespace: str
    lan: str  # the LAN's /24
    gateway: str  # the site router's LAN address
    uplink_address: str  # the site router's end of its uplink
    wan_address: str  # the WAN router's end
    wan_interface: str  # the uplink's name in the WAN router

    def describe(self, uplink_gbps: float | None) -> dict[str, Any]:
        """The inventory's entry for this site."""
        return {
            "hosts": [h.name for h in self.hosts],
            "lan": self.lan,
            "uplink_gbps": uplink_gbps,
            "router_netns": self.router_namespace,
            "redirector": {
                "name": self.redirector.name,
                "address": self.redirector.address,
                "netns": self.redirector.netns,
                "state": "running",  # xrootd + cmsd, the site's manager
            },
        }


@dataclass(frozen=True)
class SiteLayout:
    """Every site of a lab, and the hosts in the order they become lab nodes."""

    sites: tuple[SitePlan, ...]
    levels: tuple[NodePlan, ...] = ()  # regional / global redirector hosts on the WAN router

    @property
    def hosts(self) -> list[NodePlan]:
        return [h for s in self.sites for h in s.hosts]

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sites]

    def site_of(self, host: str) -> SitePlan:
        return next(s for s in self.sites if any(h.name == host for h in s.hosts))

    def all_members(self) -> list[NodePlan]:
        """Hosts and reserved redirectors: everything with a name in the lab's /etc/hosts."""
        return [m for s in self.sites for m in (*s.hosts, s.redirector)] + list(self.levels)

    def namespaces(self) -> list[str]:
        return [s.router_namespace for s in self.sites] + [
            m.netns for m in self.all_members() if m.netns
        ]

    def subnets(self) -> list[str]:
        return [self.sites[0].uplink_address.rsplit(".", 1)[0] + ".0/24"] + [
            s.lan for s in self.sites
        ]

    def host_matrix(self, spec: str) -> RttMatrix:
        """The RTT of every host pair: the sites' RTT between sites, 0 (the LAN) within one."""
        between = site_matrix(spec, self.places)
        site = {h.name: h.site or "" for h in self.hosts}
        pairs = {
            (a, b): 0.0 if site[a] == site[b] else between.target(site[a], site[b])
            for a in site
            for b in site
            if a != b
        }
        placed = {h.name: between.sites[h.site] for h in self.hosts if h.site in between.sites}
        return RttMatrix(spec, pairs, placed)

    @property
    def places(self) -> list[str]:
        """What --rtt gives RTTs between: the sites, then the redirector levels."""
        return self.names + [level.name for level in self.levels]

    def describe(self, uplink_gbps: float | None) -> dict[str, dict[str, Any]]:
        return {s.name: s.describe(uplink_gbps) for s in self.sites}

    @property
    def meta(self) -> NodePlan | None:
        """The level that runs the meta-manager: the top one given (global over regional)."""
        return self.levels[-1] if self.levels else None

    def upstream_of(self, name: str) -> NodePlan | None:
        """The redirector level whose cmsd `name` (a site's manager, or a level) logs in to: the
        lowest level for a site manager, the next level up for a level, None at the top."""
        names = [level.name for level in self.levels]
        if name in names:
            k = names.index(name)
            return self.levels[k + 1] if k + 1 < len(self.levels) else None
        return self.levels[0] if self.levels else None

    def describe_levels(self) -> dict[str, dict[str, Any]]:
        """The inventory's "redirectors": each level's host and state (every level runs)."""
        return {
            level.name: {"address": level.address, "netns": level.netns, "state": "running"}
            for level in self.levels
        }


def site_matrix(spec: str, sites: Sequence[str]) -> RttMatrix:
    """An --rtt SPEC read over site names (a matrix file names sites instead of lab-N); with a
    profile, a lab site named like one of its sites (ucsd, unl, ...) stands there, the others
    take the profile's remaining sites in order."""
    if spec.strip() not in PROFILES:
        return rtt_matrix(spec, list(sites))
    known = PROFILES[spec.strip()]
    if len(sites) > len(known):
        raise UserError(f"the {spec} profile has {len(known)} sites; give {len(known)} or fewer")
    by_name = {site.name.lower(): site for site in known}
    placed = {name: by_name[name] for name in sites if name in by_name}
    spare = iter(site for site in known if site not in placed.values())
    placed |= {name: next(spare) for name in sites if name not in placed}
    pairs = {(a, b): derived_rtt_ms(placed[a], placed[b]) for a in sites for b in sites if a != b}
    return RttMatrix(spec.strip(), pairs, {name: site.name for name, site in placed.items()})


def largest_site_rtt_ms(sites: str, levels: str | None) -> Callable[[str, int], float]:
    """For `lab up --tcp-buffer auto` (paper_profile.choose_lab): an --rtt spec's largest RTT
    between the sites of `--sites SITES` and the redirector `levels`."""
    names = [name for name, _ in parse_sites(sites)] + parse_levels(levels)
    return lambda spec, _nodes: max(site_matrix(spec, names).rtt_ms.values(), default=0.0)


def site_lines(
    sites: dict[str, dict[str, Any]], levels: dict[str, dict[str, Any]] | None = None
) -> list[str]:
    """One line per site of an inventory's "sites" section and per redirector level, for
    `lab up` and `lab status`."""
    lines = []
    for site, about in sites.items():
        rdr, cap = about["redirector"], about["uplink_gbps"]
        uplink = f"{cap:g} Gbit/s" if cap else "uncapped"
        lines.append(
            f"site {site}: {', '.join(about['hosts'])} on {about['lan']}, uplink {uplink}; "
            f"{rdr['name']} {rdr['address']} {rdr['state']}"
        )
    for level, about in (levels or {}).items():
        lines.append(f"redirector level {level}: {about['address']} {about['state']}")
    return lines


def parse_sites(text: str) -> list[tuple[str, int]]:
    """'ucsd:3,unl:2' -> [("ucsd", 3), ("unl", 2)]; UserError naming what is wrong."""
    sites: list[tuple[str, int]] = []
    for part in (p.strip() for p in text.split(",")):
        name, _, count = part.partition(":")
        if not SITE_NAME.match(name) or not count.strip().isdigit():
            raise UserError(
                f"--sites entry {part!r} is not <site>:<hosts>; write e.g. ucsd:3,unl:2 "
                "(site names: a lowercase letter, then up to 7 lowercase letters or digits)"
            )
        hosts = int(count)
        if not 1 <= hosts <= MAX_HOSTS_PER_SITE:
            raise UserError(f"site {name} needs 1 to {MAX_HOSTS_PER_SITE} hosts, not {hosts}")
        if name in (s for s, _ in sites):
            raise UserError(f"site {name} is given twice in --sites")
        if name in ("regional", "global"):
            raise UserError(f"{name!r} names a redirector level; give the site another name")
        sites.append((name, hosts))
    if not 1 <= len(sites) <= MAX_SITES:
        raise UserError(f"--sites takes 1 to {MAX_SITES} sites, not {len(sites)}")
    return sites


def parse_levels(text: str | None) -> list[str]:
    """`--redirectors regional,global` -> the levels above the sites, in LEVELS' order."""
    given = [part.strip() for part in (text or "").split(",") if part.strip()]
    unknown = [level for level in given if level not in LEVELS]
    if unknown:
        raise UserError(f"--redirectors takes {' and/or '.join(LEVELS)}, not {unknown[0]!r}")
    return [level for level in LEVELS if level in given]


def plan_sites(
    text: str, mode: str, network: LabNetwork, redirectors: str | None = None
) -> SiteLayout:
    """The layout of `--sites TEXT` (see the module docstring) and, with `redirectors`
    ("regional,global"), the hosts reserved for those levels; netns mode only."""
    if mode != NETNS:
        raise UserError(
            "--sites needs netns mode (root): a site's hosts share one shaped uplink, which "
            "loopback cannot emulate"
        )
    wanted = parse_sites(text)
    network.validate(len(wanted) + 1)  # prefix, and room for the uplinks' and LANs' /24s
    transit = network.subnet_offset + 1
    sites = []
    index = 0
    for s, (name, count) in enumerate(wanted, start=1):
        lan = network.subnet_offset + 1 + s
        gateway = f"10.99.{lan}.1"
        hosts = []
        for i in range(1, count + 1):
            index += 1
            octet = FIRST_HOST_OCTET + i
            hosts.append(_member(network, name, str(i), index, lan, octet, CLUSTER_PORTS))
        sites.append(
            SitePlan(
                index=s,
                name=name,
                hosts=tuple(hosts),
                redirector=_member(
                    network, name, "rdr", 0, lan, REDIRECTOR_OCTET, REDIRECTOR_PORTS
                ),
                router_namespace=f"{network.prefix}-{name}-gw",
                lan=f"10.99.{lan}.0/24",
                gateway=gateway,
                uplink_address=f"10.99.{transit}.{4 * s + 2}",
                wan_address=f"10.99.{transit}.{4 * s + 1}",
                wan_interface=f"s{s}",
            )
        )
    levels = []
    for k, level in enumerate(parse_levels(redirectors), start=len(sites) + 1):
        address, gateway = f"10.99.{transit}.{4 * k + 2}", f"10.99.{transit}.{4 * k + 1}"
        levels.append(
            NodePlan(
                index=k, name=level, address=address, ports=dict(REDIRECTOR_PORTS),
                data_ports=NETNS_DATA_PORTS, netns=f"{network.prefix}-{level}",
                router_interface=f"r{k}", gateway=gateway, subnet=f"{address}/30",
                dns_names=[level],
            )
        )  # fmt: skip
    return SiteLayout(tuple(sites), tuple(levels))


def _member(
    network: LabNetwork,
    site: str,
    suffix: str,
    index: int,
    lan: int,
    octet: int,
    ports: dict[str, int],
) -> NodePlan:
    name = f"{site}-{suffix}"
    return NodePlan(
        index=index,
        name=name,
        address=f"10.99.{lan}.{octet}",
        ports=dict(ports),
        data_ports=NETNS_DATA_PORTS,
        netns=f"{network.prefix}-{name}",
        router_interface=f"h{suffix}",  # the bridge port in the site router
        gateway=f"10.99.{lan}.1",
        subnet=f"10.99.{lan}.0/24",
        dns_names=[name],
        site=site,
    )

"""`campaign run --scope site`: measurements between sites, not hosts.

A site is its data-server hosts (Endpoint.site) and its front, the redirector that receives
what is sent to the site (Endpoint.redirector with that site). A site measurement is K
copies from one site to another, "src" and "dst" naming the two fronts ("<site>-rdr"):
- HTTPS and root://: every copy is addressed to the fronts, as a client of the site would:
  the source URL at the source site's redirector, the destination at the destination's;
  each redirector sends its end on to one of its data servers (the copy's record names
  which: source_server, destination_server).
- GridFTP: a GridFTP site's usual front is a DNS round-robin name over its servers (LVS
  needs a director host, striping a special server setup; round robin is what most grid
  sites publish). Each copy resolves the front anew and gets the next server, so copy i
  goes from source host i mod M_src to destination host i mod M_dst; like DNS, the
  rotation does not know whether a server is up.
- The scaling sweep (`--sweep-hosts`): for m = 1 .. min(M_src, M_dst), the K copies spread
  round-robin over m host pairs (source host i -> destination host i), addressed to the
  hosts directly; aggregate throughput against m is the site's scaling curve through its
  shared uplink.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from orchestrator.campaign.settings import CampaignSettings
from orchestrator.endpoints import ClientCredentials, Endpoint, reported_site
from orchestrator.measurement.lookup import PROTOCOLS as LOOKUP_PROTOCOLS
from orchestrator.measurement.lookup import plan_lookups, run_lookup
from orchestrator.measurement.spec import Lane, MeasurementRequest, MeasurementSpec
from orchestrator.report.reporter import Reporter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SiteFront:
    """One site as a site campaign sees it: its front (redirector) and its hosts by name."""

    site: str
    front: Endpoint
    hosts: tuple[Endpoint, ...]


def site_fronts(nodes: Iterable[Endpoint], redirectors: Iterable[Endpoint]) -> dict[str, SiteFront]:
    """Front name -> SiteFront for every site that has both a redirector and hosts; a site
    without one of them is left out, with a warning saying which."""
    hosts: dict[str, list[Endpoint]] = {}
    for node in nodes:
        site = reported_site(node.site)
        if site is not None:
            hosts.setdefault(site, []).append(node)
    fronts = {r.site: r for r in redirectors if r.site is not None}
    for site in sorted(set(hosts) ^ set(fronts)):
        missing = "redirector" if site in hosts else "data-server host"
        log.warning("site %s has no %s: it is left out of the site campaign", site, missing)
    return {
        fronts[site].name: SiteFront(
            site, fronts[site], tuple(sorted(hosts[site], key=lambda e: e.name))
        )
        for site in sorted(set(hosts) & set(fronts))
    }


def discover_fronts(discovery: object, nodes: Iterable[Endpoint]) -> dict[str, SiteFront]:
    """The sites' fronts, from a discovery backend that knows redirectors (`redirectors()`);
    none from one that does not."""
    redirectors = getattr(discovery, "redirectors", None)
    if redirectors is None:
        log.warning("%s knows no redirectors: no sites to measure", type(discovery).__name__)
        return {}
    return site_fronts(nodes, redirectors())


def sweep_specs(
    specs: Sequence[MeasurementSpec], fronts: dict[str, SiteFront]
) -> list[MeasurementSpec]:
    """The scaling sweep of `specs` (site specs): each again with hosts = 1 .. min(M_src,
    M_dst), right after it."""
    swept = []
    for spec in specs:
        swept.append(spec)
        most = min(len(fronts[spec.src].hosts), len(fronts[spec.dst].hosts))
        swept += [replace(spec, hosts=m) for m in range(1, most + 1)]
    return swept


def plan_campaign_specs(
    settings: CampaignSettings, names: Sequence[str], fronts: dict[str, SiteFront]
) -> list[MeasurementSpec]:
    """A campaign's plan: over the hosts `names` (scope host) or the sites' `fronts` (scope
    site, with the scaling sweep when asked)."""
    if settings.scope != "site":
        return settings.plan(names)
    specs = settings.plan(sorted(fronts))
    return sweep_specs(specs, fronts) if settings.sweep_hosts else specs


def site_lanes(
    spec: MeasurementSpec, src: SiteFront, dst: SiteFront, transfers: int
) -> tuple[Lane, ...]:
    """Where each copy of a site measurement goes (the module docstring says why)."""
    if spec.hosts is not None:
        return tuple(zip(src.hosts[: spec.hosts], dst.hosts[: spec.hosts], strict=True))
    if spec.protocol == "gridftp":
        return tuple(
            (src.hosts[i % len(src.hosts)], dst.hosts[i % len(dst.hosts)]) for i in range(transfers)
        )
    return ()  # every copy from front to front


def site_request(
    spec: MeasurementSpec,
    fronts: dict[str, SiteFront],
    transfers: int,
    file_size: int,
) -> MeasurementRequest:
    """The request of a site spec: the two fronts, and the lanes the copies take."""
    src, dst = fronts[spec.src], fronts[spec.dst]
    lanes = site_lanes(spec, src, dst, transfers)
    return MeasurementRequest(spec, src.front, dst.front, transfers, file_size, lanes=lanes)


def lookup_results(
    discovery: object,
    nodes: Sequence[Endpoint],
    creds: ClientCredentials,
    protocols: Sequence[str],
    campaign: str,
) -> Iterator[dict[str, Any]]:
    """`--lookups`: for each site and each redirector level above it (its manager, regional,
    global), one lookup of a fresh file per protocol of the campaign that redirects (https,
    root), timed hop by hop; yields each record's JSON as it is taken (blocking: run it in a
    thread). A failed lookup is a record saying why."""
    redirectors = getattr(discovery, "redirectors", list)()
    rtts = getattr(discovery, "level_rtts", dict)() or None
    plans = plan_lookups(redirectors, [n for n in nodes if not n.redirector], rtts)
    for protocol in (p for p in protocols if p in LOOKUP_PROTOCOLS):
        for plan in plans:
            yield run_lookup(plan, creds, protocol, campaign=campaign).to_json()


def report_lookups(
    discovery: object,
    nodes: Sequence[Endpoint],
    creds: ClientCredentials | None,
    settings: CampaignSettings,
    reporter: Reporter,
    campaign: str,
) -> int:
    """`--lookups`: every lookup of `lookup_results`, reported as it is taken; returns how
    many were taken (the log says how many failed)."""
    if creds is None:
        log.warning("--lookups needs the client credentials: no lookups taken")
        return 0
    taken = failed = 0
    for result in lookup_results(discovery, nodes, creds, settings.protocols, campaign):
        reporter.report_result("lookup", result)
        taken += 1
        failed += result["outcome"] != "success"
    log.info("redirector lookups: %d taken, %d failed", taken, failed)
    return taken

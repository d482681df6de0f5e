"""A site lab's XRootD cluster (`lab up --sites`, process runtime): each site's `<site>-rdr`
runs xrootd + cmsd as the site's manager, the site's hosts' XRootD as data servers
subscribed to it, and with `--redirectors` a hierarchy above the site managers: the top level
given (global, else regional) a meta-manager; with both, regional a manager subscribed to
global, the site managers subscribed to regional (why not a meta-manager there:
servers/cluster_roles.py). Roles and config: servers/cluster_roles.py.

A redirector serves root:// and HTTPS on one port (1094), no GridFTP; it holds no data (an
empty data root of its own). It has a host certificate from the lab's CA and the same grid
map, authdb and macaroon secret as every server of the lab. Its endpoint
(Endpoint.redirector) is listed apart from the hosts: a campaign pairs hosts only.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.errors import UserError
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.health import client_tls_context, tcp_open
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.node_files import AccessFiles, NodeFiles, prepare_node_dir
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.runtime import PROCESS, Runtime
from orchestrator.lab.sites import CMS_PORT, SiteLayout, site_matrix
from orchestrator.lab.token_trust import trust_in_namespace
from orchestrator.lab.topology import NodePlan
from orchestrator.servers.cluster_roles import STANDALONE, ClusterPlace

LOOKUP_TIMEOUT = 15.0  # a redirector's HEAD: the manager's lookup stalls (cms.delay lookup)
READY_TIMEOUT = 60.0  # a manager answers 500 until its servers have logged in


def check_runtime(layout: SiteLayout | None, runtime: str) -> None:
    if layout is not None and runtime != PROCESS:
        raise UserError(
            "--sites runs its redirectors with the process runtime only (podman: not yet); "
            "use --runtime process"
        )


def cluster_place(layout: SiteLayout | None, plan: NodePlan) -> ClusterPlace:
    """Where `plan` (a host or a redirector of a site lab) sits in the XRootD cluster."""
    if layout is None:
        return STANDALONE
    meta = layout.meta
    if meta is not None and plan.name == meta.name:
        return ClusterPlace(role="meta-manager", address=meta.address, cms_port=CMS_PORT)
    managers = [*layout.levels, *(site.redirector for site in layout.sites)]
    if any(plan.name == manager.name for manager in managers):
        above = layout.upstream_of(plan.name)
        upstream = f"{above.address}:{CMS_PORT}" if above is not None else None
        return ClusterPlace(
            role="manager", address=plan.address, cms_port=CMS_PORT, upstream=upstream
        )
    for site in layout.sites:
        manager = site.redirector
        if plan in site.hosts:
            return ClusterPlace(role="server", upstream=f"{manager.address}:{CMS_PORT}")
    return STANDALONE


def redirector_plans(layout: SiteLayout) -> list[NodePlan]:
    """The redirectors to start, top down: the levels (global first), then each site's manager."""
    return list(reversed(layout.levels)) + [s.redirector for s in layout.sites]


def start_redirectors(
    record: LabRun,
    layout: SiteLayout,
    servers: Runtime,
    ca: CertificateAuthority,
    access: AccessFiles,
    prepared: Callable[[NodePlan, Path], NodeFiles],
) -> list[Endpoint]:
    """Start every redirector of `layout` (xrootd + cmsd, recorded in `record` like the hosts'
    servers) and return their endpoints; `prepared(plan, data_root)` gives a node's files."""
    account = servers.server_account()
    endpoints = []
    for plan in redirector_plans(layout):
        files = prepared(plan, lab_data_dir(record.network.prefix) / plan.name)
        record.data_dirs.append(str(files.data_root))
        record.save()
        host = ca.issue_host(plan.name, ips=[plan.address], dns=plan.dns_names)
        prepare_node_dir(files.node_dir, files.data_root, account, host.cert, host.key)
        access.write(files.node_dir, account)
        if plan.netns is not None and files.issuer is not None:
            trust_in_namespace(plan.netns, files.issuer.bundle)
        files = replace(files, cluster=cluster_place(layout, plan), gridftp=False)
        servers.start_node(record, files, {})
        endpoints.append(
            Endpoint(
                name=plan.name,
                address=plan.address,
                ports=dict(plan.ports),
                data_root=servers.served_data_root(files),
                # None: xrdcp's GSI then accepts any server certificate of the lab's CA
                # (transfers/root.py, gsi_server_names); with the redirector's DN it would
                # refuse the data server it is redirected to ("eligible servers shunned").
                host_dn=None,
                netns=plan.netns,
                site=plan.site,
                labels={"lab": record.network.prefix},
                redirector=True,
            )
        )
    return endpoints


def https_lookup(endpoint: Endpoint, client: ClientCredentials, file_size: int) -> str:
    """HEAD of the source file at a redirector, following its redirects down to a data server:
    "ok" (the size is right and at least one redirect was followed) or why not."""
    url = f"https://{endpoint.address}:{endpoint.ports['https']}{source_name(file_size)}"
    context = client_tls_context(client)
    with httpx.Client(verify=context, timeout=LOOKUP_TIMEOUT, follow_redirects=True) as http:
        response = http.head(url)
    if response.status_code != 200:
        return f"HEAD answered {response.status_code}"
    if not response.history:
        return "answered without a redirect"
    size = int(response.headers.get("content-length", -1))
    return "ok" if size == file_size else f"size {size} != {file_size}"


def probe_redirector(
    endpoint: Endpoint, client: ClientCredentials, file_size: int
) -> dict[str, Any]:
    """A redirector's health: its port open, and the source found through it."""
    checks: dict[str, str] = {}
    for service, port in sorted(endpoint.ports.items()):
        checks[f"{service}_port"] = "ok" if tcp_open(endpoint.address, port) else "closed"
    try:
        checks["https_redirect"] = https_lookup(endpoint, client, file_size)
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        checks["https_redirect"] = f"error: {exc}"
    return {
        "ok": all(v == "ok" for v in checks.values()),
        "checks": checks,
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def wait_for_redirectors(
    endpoints: Sequence[Endpoint],
    client: ClientCredentials,
    file_size: int,
    failure: Callable[[], str | None],
) -> dict[str, dict[str, Any]]:
    """Probe each redirector until it redirects to a data server (its servers have logged in);
    UserError naming the first that does not within READY_TIMEOUT."""
    deadline = time.monotonic() + READY_TIMEOUT
    health: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        while True:
            problem = failure()
            if problem:
                raise UserError(problem)
            health[endpoint.name] = probe_redirector(endpoint, client, file_size)
            if health[endpoint.name]["ok"]:
                break
            if time.monotonic() > deadline:
                raise UserError(
                    f"redirector {endpoint.name} does not redirect to a data server after "
                    f"{READY_TIMEOUT:.0f}s: {health[endpoint.name]['checks']}"
                )
            time.sleep(0.5)
    return health


def level_rtts_ms(inventory: LabInventory) -> dict[str, dict[str, float]]:
    """Each redirector's RTT target (ms) to each site of a site lab, for the lookups
    (measurement/lookup.py): its own site 0 for a site's manager, a level's from `--rtt` as the
    lab placed it (sites, then levels); the levels are left out without an emulated WAN or
    when its spec no longer reads (a matrix file gone): their RTT is then unknown."""
    spec, sites = inventory.wan.get("rtt_spec"), list(inventory.sites)
    rtts: dict[str, dict[str, float]] = {f"{site}-rdr": {site: 0.0} for site in sites}
    if not spec or not sites:
        return rtts
    try:
        between = site_matrix(spec, [*sites, *inventory.redirectors])
    except (UserError, OSError, ValueError):
        return rtts
    for level in inventory.redirectors:
        rtts[level] = {site: between.target(level, site) for site in sites}
    return rtts

"""Bring a lab up, report on it, take it down: the API behind `tpcbench lab`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ca.authority import CAError, CertificateAuthority
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.datafiles import copy_source_file, lab_data_dir
from orchestrator.lab.health import probe_node, wait_until_serving
from orchestrator.lab.inventory import (
    NO_LAB,
    LabInventory,
    inventory_path,
    lab_dir,
    load_inventory,
    save_inventory,
)
from orchestrator.lab.kube.cluster_lab import stop_cluster
from orchestrator.lab.network import check_netns_free, create_network, destroy_network
from orchestrator.lab.node_files import AccessFiles, NodeFiles, copy_certdir, own, prepare_node_dir
from orchestrator.lab.preflight import check_host_ports_free, check_links, check_reachable_by
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.runtime import PROCESS, Runtime
from orchestrator.lab.runtime_registry import make_runtime
from orchestrator.lab.site_network import build_sites, check_sites_free
from orchestrator.lab.site_servers import (
    check_runtime,
    cluster_place,
    probe_redirector,
    start_redirectors,
    wait_for_redirectors,
)
from orchestrator.lab.sites import SiteLayout, plan_sites
from orchestrator.lab.token_issuer import (
    issuer_address,
    issuer_health,
    start_token_issuer,
    stop_token_issuer,
)
from orchestrator.lab.token_trust import trust_in_namespace
from orchestrator.lab.topology import LOOPBACK, MODES, NETNS, LabNetwork, NodePlan, plan_nodes
from orchestrator.lab.wan import refresh_wan, start_wan, stop_wan
from orchestrator.lab.wan_profile import RttMatrix, TcpSettings
from orchestrator.paths import tpcbench_home
from orchestrator.servers import render_grid_mapfile
from orchestrator.servers.access import hosts_dn_prefix, new_macaroon_secret, render_xrootd_gridmap
from orchestrator.servers.source_file import (
    SOURCE_MODE,
    ensure_token_source,
    source_path,
    write_source_file,
)

DEFAULT_FILE_SIZE = 1 << 30
CLIENT_NAME = "orchestrator"


def run_record_path(home: Path) -> Path:
    return lab_dir(home) / "run.json"


def choose_mode(mode: str) -> str:
    if mode == "auto":
        return NETNS if os.geteuid() == 0 else LOOPBACK
    if mode not in MODES:
        raise UserError(f"unknown lab mode {mode!r}; use auto, {', '.join(MODES)}")
    if mode == NETNS and os.geteuid() != 0:
        raise UserError("netns mode needs root; run as root or use: --mode loopback")
    return mode


def start_lab(
    home: Path | None = None,
    nodes: int = 3,
    file_size: int = DEFAULT_FILE_SIZE,
    *,
    ca_dir: Path | None = None,
    rate_gbit: float | None = None,
    mode: str = "auto",
    network: LabNetwork | None = None,
    runtime: str = PROCESS,
    rtt: str | None = None,
    tcp: TcpSettings | None = None,
    profile: dict[str, Any] | None = None,
    sites: str | None = None,
    site_link_gbit: float | None = None,
    redirectors: str | None = None,
) -> LabInventory:
    """Start `nodes` lab nodes (xrootd + gridftp each) and return their inventory.

    `network` defaults to LabNetwork.from_environment() (TPCBENCH_LAB_PREFIX, ...);
    `runtime` is "process" (servers as processes) or "podman" (containers of our images).
    `rate_gbit` caps each node's link; `rtt` (uniform:30ms, prp, a matrix file) emulates a
    WAN between the nodes (wan.py); `tcp` is every node's congestion control and buffers;
    `profile` (`lab up --profile`: {"name": ..., ...}) is kept in the run record and inventory.
    `sites` ("ucsd:3,unl:2", instead of `nodes`) puts the hosts behind one uplink per site,
    capped at `site_link_gbit`, with `rtt` between sites (sites.py, site_network.py);
    `redirectors` ("regional,global") runs those levels' redirectors on the WAN above the
    sites' managers (site_servers.py).
    On any failure everything already started is taken down again before raising.
    """
    home = Path(home or tpcbench_home())
    mode = choose_mode(mode)
    network = network or LabNetwork.from_environment()
    layout = plan_sites(sites, mode, network, redirectors) if sites is not None else None
    plans = layout.hosts if layout else plan_nodes(nodes, mode, network)
    if site_link_gbit is not None and (layout is None or site_link_gbit <= 0):
        raise UserError("--site-link-gbit needs --sites and a positive rate")
    if redirectors is not None and layout is None:
        raise UserError("--redirectors needs --sites: the levels stand above the sites")
    if file_size <= 0:
        raise UserError(f"--file-size must be a positive number of bytes, not {file_size}")
    matrix = check_links(mode, plans, rate_gbit, rtt, tcp, layout)
    check_no_lab_running(home)
    check_runtime(layout, runtime)
    servers = make_runtime(runtime)
    servers.preflight(mode)
    ca_dir = Path(ca_dir or home / "ca")
    try:
        ca = CertificateAuthority.load(ca_dir)
    except CAError as exc:
        raise UserError(str(exc)) from None
    if layout is not None:
        check_sites_free(layout, network)
    elif mode == NETNS:
        check_netns_free(plans, network)
    else:
        check_host_ports_free(plans)
    account = servers.server_account()
    if servers.name == PROCESS:  # containers get their directories mounted instead
        check_reachable_by(account, lab_dir(home))

    record = LabRun(
        path=run_record_path(home),
        mode=mode,
        network=network,
        runtime=servers.name,
        profile=(profile or {}).get("name"),
    )
    record.save()
    try:
        links = _Links(rate_gbit, matrix, tcp or TcpSettings(), layout, site_link_gbit)
        return _build(home, record, plans, servers, ca, ca_dir, file_size, links, profile or {})
    except (OSError, CAError) as exc:
        stop_lab(home)
        raise UserError(f"lab up failed and was rolled back: {exc}") from exc
    except BaseException:
        stop_lab(home)
        raise


def check_no_lab_running(home: Path) -> None:
    record_path = run_record_path(home)
    if record_path.exists():
        running = LabRun.load(record_path)
        started = len({p.node for p in running.processes} | {c.node for c in running.containers})
        if running.cluster is not None:
            started = len(running.cluster.nodes)
        raise UserError(
            f"a lab is already running from {lab_dir(home)} ({started} nodes, {running.mode} "
            f"mode, {running.runtime} runtime); stop it with: tpcbench lab down"
        )


@dataclass(frozen=True)
class _Links:
    """What the network between the nodes is like: capacity, RTTs, TCP settings."""

    rate_gbit: float | None
    matrix: RttMatrix | None
    tcp: TcpSettings
    sites: SiteLayout | None = None
    uplink_gbit: float | None = None

    def settings(self) -> dict[str, Any]:
        """The inventory's "wan" section (the delay program's state is added by wan.py)."""
        return {
            "rtt_spec": self.matrix.spec if self.matrix else None,
            "sites": self.matrix.sites if self.matrix else {},
            "link_gbps": self.rate_gbit,
            "congestion_control": self.tcp.congestion_control,
            "tcp_buffer_max": self.tcp.buffer_max,
            "tcp_buffer_why": self.tcp.why,
        }


def _build(
    home: Path,
    record: LabRun,
    plans: Sequence[NodePlan],
    servers: Runtime,
    ca: CertificateAuthority,
    ca_dir: Path,
    file_size: int,
    links: _Links,
    profile: dict[str, Any],
) -> LabInventory:
    network = record.network
    account = servers.server_account()
    if links.sites is not None:
        rtt = links.matrix.spec if links.matrix else None
        build_sites(
            record, links.sites, network, links.rate_gbit, links.uplink_gbit, links.tcp, rtt
        )
    elif record.mode == NETNS:
        create_network(record, plans, network, links.rate_gbit, links.tcp)
        if links.matrix is not None:
            start_wan(record, plans, network, links.matrix)
    issuer, minter = start_token_issuer(
        record, lab_dir(home) / "issuer", ca, *issuer_address(record.mode, network),
        orchestrator_dn=ca.client_subject_dn(CLIENT_NAME),
    )  # fmt: skip
    client_cred = ca.issue_client(CLIENT_NAME)
    client = ClientCredentials(
        cert=client_cred.cert, key=client_cred.key, certdir=ca.certdir, tokens=minter
    )
    certdir = copy_certdir(ca.certdir, lab_dir(home) / "certificates")
    access = AccessFiles(
        grid_mapfile=render_grid_mapfile({client_cred.subject_dn: account.name}),
        xrootd_gridmap=render_xrootd_gridmap([client_cred.subject_dn], hosts_dn_prefix(ca)),
        macaroon_secret=new_macaroon_secret(),
    )

    nodes_dir = lab_dir(home) / "nodes"
    shutil.rmtree(nodes_dir, ignore_errors=True)  # logs of the previous lab
    data_dir = lab_data_dir(network.prefix)
    hosts = {plan.name: plan.address for plan in plans}
    endpoints = []
    source: Path | None = None
    for plan in plans:
        node_dir = nodes_dir / plan.name
        data_root = data_dir / plan.name
        record.data_dirs.append(str(data_root))
        record.save()
        host = ca.issue_host(plan.name, ips=[plan.address], dns=plan.dns_names)
        prepare_node_dir(node_dir, data_root, account, host.cert, host.key)
        access.write(node_dir, account)
        target = source_path(data_root, file_size)
        if source is None:
            write_source_file(target, file_size)
            source = target
        else:
            copy_source_file(source, target)
        own(target, account, SOURCE_MODE)
        own(ensure_token_source(data_root, file_size).parent, account, 0o755)
        if plan.netns is not None:
            trust_in_namespace(plan.netns, issuer.bundle)
        files = NodeFiles(
            plan=plan, node_dir=node_dir, data_root=data_root, certdir=certdir, issuer=issuer,
            cluster=cluster_place(links.sites, plan),
        )  # fmt: skip
        servers.start_node(record, files, hosts)
        endpoints.append(
            Endpoint(
                name=plan.name,
                address=plan.address,
                ports={**plan.ports, **servers.extra_ports()},
                data_root=servers.served_data_root(files),
                host_dn=host.subject_dn,
                netns=plan.netns,
                site=plan.site,
                labels={"lab": network.prefix},
                link_gbps=links.rate_gbit,
                tcp_buffer=links.tcp.buffer_max if plan.netns is not None else None,
                rtt_targets_ms=links.matrix.targets_from(plan.name) if links.matrix else {},
            )
        )
    redirectors: list[Endpoint] = []
    if links.sites is not None:  # the sites' managers (and a meta-manager above them)
        redirectors = start_redirectors(
            record, links.sites, servers, ca, access,
            lambda plan, root: NodeFiles(plan, nodes_dir / plan.name, root, certdir, issuer),
        )  # fmt: skip
    wait_until_serving(record, servers, endpoints + redirectors)
    inventory = LabInventory(
        nodes=endpoints,
        client=client,
        file_size=file_size,
        ca=ca_dir,
        mode=record.mode,
        runtime=servers.name,
        wan=links.settings(),
        token_issuer={"url": issuer.url, "health": issuer_health(issuer.url, ca.certdir)},
        profile=profile,
        sites=links.sites.describe(links.uplink_gbit) if links.sites else {},
        redirectors=links.sites.describe_levels() if links.sites else {},
        redirector_nodes=redirectors,
    )
    health = {e.name: probe_node(e, client, file_size) for e in endpoints}
    failure = lambda: servers.failure_detail(record)  # noqa: E731
    health |= wait_for_redirectors(redirectors, client, file_size, failure)
    inventory = replace(inventory, health=health)
    if record.mode == NETNS:  # the TCP settings read back, and the RTTs checked once
        inventory = refresh_wan(inventory, record)
    save_inventory(inventory, inventory_path(home))
    return inventory


def stop_lab(home: Path | None = None) -> list[str]:
    """Stop every process the lab started, remove its namespaces and data; idempotent.

    Returns what was stopped/removed; raises UserError if anything could not be removed.
    """
    home = Path(home or tpcbench_home())
    record_path = run_record_path(home)
    if not record_path.exists():
        inventory_path(home).unlink(missing_ok=True)
        return []
    record = LabRun.load(record_path)
    if record.cluster is not None:  # its agents go before the namespaces they live in
        plans = plan_nodes(max(len(record.cluster.nodes), 1), NETNS, record.network)
        done, problems = stop_cluster(record, plans)
    else:
        done, problems = make_runtime(record.runtime).stop(record)
    issuer_done, issuer_problems = stop_token_issuer(record)
    done.extend(issuer_done)
    problems.extend(issuer_problems)
    wan_done, wan_problems = stop_wan(record)
    done.extend(wan_done)
    problems.extend(wan_problems)
    if record.mode == NETNS:
        problems.extend(destroy_network(record))
        done.extend(f"removed namespace {name}" for name in record.namespaces)
    for folder in record.data_dirs:
        shutil.rmtree(folder, ignore_errors=True)
        if Path(folder).exists():
            problems.append(f"data directory {folder} remains")
    data_parent = {str(Path(f).parent) for f in record.data_dirs}
    for folder in data_parent:
        if Path(folder).is_dir() and not any(Path(folder).iterdir()):
            Path(folder).rmdir()
    if problems:
        raise UserError(
            "lab down left things behind: " + "; ".join(problems) + "; run tpcbench lab down again"
        )
    inventory_path(home).unlink(missing_ok=True)
    record_path.unlink()
    return done


def lab_status(home: Path | None = None) -> LabInventory:
    """The running lab's inventory with fresh health checks (processes, ports, HTTPS) and, in
    netns mode, fresh TCP settings, the WAN delay program's state and pair RTTs (saved)."""
    home = Path(home or tpcbench_home())
    inventory = load_inventory(inventory_path(home))
    record_path = run_record_path(home)
    if not record_path.exists():
        raise UserError(NO_LAB)
    record = LabRun.load(record_path)
    liveness = make_runtime(record.runtime).liveness(record)
    health = {}
    for endpoint in [*inventory.nodes, *inventory.redirector_nodes]:
        probe = probe_redirector if endpoint.redirector else probe_node
        result = probe(endpoint, inventory.client, inventory.file_size)
        for (node, check), verdict in liveness.items():
            if node == endpoint.name:
                result["checks"][check] = verdict
                result["ok"] = result["ok"] and verdict == "ok"
        health[endpoint.name] = result
    inventory = replace(inventory, health=health)
    if inventory.token_issuer.get("url"):
        url = inventory.token_issuer["url"]
        checked = {"url": url, "health": issuer_health(url, inventory.client.certdir)}
        inventory = replace(inventory, token_issuer=checked)
    if record.mode == NETNS:
        inventory = refresh_wan(inventory, record)
        save_inventory(inventory, inventory_path(home))  # the last measured RTTs
    return inventory

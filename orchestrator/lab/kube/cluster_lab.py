"""A Kubernetes cluster on the lab's nodes: start it, say how it is, take it down.

The lab's network (namespaces, router, emulated WAN) is made first by lifecycle.py, as for
every lab; then this module starts the control plane on this machine at the lab's host
address, and on every node containerd, a kubelet and kube-proxy (node_agents.py). Pods get
10.244.<node's octet>.0/24 on a bridge in their node; the router, the host and every node
route those subnets, so pods reach each other, the API server and the lab's nodes.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orchestrator.lab.processes as processes
from orchestrator.errors import UserError
from orchestrator.lab.kube import addons, images, kernel_settings, node_agents, node_config
from orchestrator.lab.kube.binaries import ClusterBinaries
from orchestrator.lab.kube.control_plane import SERVICE_RANGE, ControlPlane, KubeUser, free_ports
from orchestrator.lab.kube.node_config import NodeLayout, pod_subnet
from orchestrator.lab.network import in_namespace, run
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import NodePlan

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

API_PORT = 6443
CONTROL_PLANE_NODE = "control-plane"
READY_TIMEOUT = 300.0  # a busy 2-core machine starts the API server and kubelets slowly
NODE_MONITOR_GRACE = "20s"  # a stopped kubelet's node goes NotReady after this
# Every kubelet on a machine serves its device manager on this one socket (a path kubelet
# fixes), clearing the folder first: two started at once can race, and the loser stops with
# "bind: address already in use". So each kubelet starts once the one before it has bound.
DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")


def layouts(record: LabRun, plans: Sequence[NodePlan]) -> list[NodeLayout]:
    assert record.cluster is not None
    root = Path(record.cluster.workdir) / "nodes"
    prefix = record.network.prefix
    return [
        NodeLayout(plan, root / plan.name, node_config.cgroup_root(prefix, plan)) for plan in plans
    ]


def kubeconfig_path(record: LabRun) -> Path:
    assert record.cluster is not None
    return Path(record.cluster.workdir) / "control-plane" / "kubeconfig"


def api_client(record: LabRun) -> ApiClient:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig_path(record)))


# -- start -----------------------------------------------------------------------------------


def start_cluster(
    record: LabRun,
    plans: Sequence[NodePlan],
    binaries: ClusterBinaries,
    image_tags: list[str],
    labels: dict[str, dict[str, str]],
) -> None:
    """Control plane, node agents (each node with its `labels`), images, DNS and volumes;
    every step recorded first."""
    cluster = record.cluster
    assert cluster is not None
    workdir = Path(cluster.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    etcd_port, peer_port = free_ports(2)
    cluster.etcd_data = f"/dev/shm/tpcbench-etcd-{record.network.prefix}-{etcd_port}"
    cluster.kernel_lease = str(record.path)
    record.save()
    kernel_settings.take(cluster.kernel_lease)

    plane = ControlPlane(
        workdir=workdir / "control-plane",
        bin_dir=binaries.control_plane,
        address=record.network.host_address,
        port=API_PORT,
        etcd_port=etcd_port,
        etcd_peer_port=peer_port,
        etcd_data=Path(cluster.etcd_data),
        node_monitor_grace=NODE_MONITOR_GRACE,
    )
    cluster.server = plane.server
    node_users = {
        plan.name: KubeUser(f"system:node:{plan.name}", ("system:nodes",)) for plan in plans
    }
    proxy_user = KubeUser("system:kube-proxy")
    plane.write_credentials([*node_users.values(), proxy_user])
    _start_control_plane(record, plane, binaries)

    nodes = layouts(record, plans)
    template = images.template_root(image_tags)  # every image, imported once per image set
    for layout in nodes:
        cluster.nodes.append(layout.plan.name)
        record.save()
        _prepare_node(record, layout, plane)
        images.seed_node(layout, template)
        containerd_config = str(layout.config_dir / "containerd.toml")
        _start_agent(record, layout, "containerd", ["containerd", "--config", containerd_config])
    for layout in nodes:
        _wait_for(f"containerd on {layout.plan.name}", layout.containerd_socket.exists, record)
    for layout in nodes:
        config = layout.config_dir
        kubeconfig = plane.write_kubeconfig(
            config / "kubelet.kubeconfig", node_users[layout.plan.name]
        )
        kubelet = node_config.kubelet_argv(
            binaries.path("kubelet"), layout, kubeconfig, labels[layout.plan.name]
        )
        bound_before = _socket_identity(DEVICE_PLUGIN_SOCKET)
        _start_agent(record, layout, "kubelet", kubelet)
        _wait_for(
            f"the kubelet on {layout.plan.name} to serve its device manager",
            lambda before=bound_before: (
                _socket_identity(DEVICE_PLUGIN_SOCKET) not in (None, before)
            ),
            record,
        )
        proxy_kubeconfig = plane.write_kubeconfig(config / "kube-proxy.kubeconfig", proxy_user)
        (config / "kube-proxy.json").write_text(
            node_config.kube_proxy_config(layout, proxy_kubeconfig)
        )
        proxy = [str(binaries.path("kube-proxy")), f"--config={config / 'kube-proxy.json'}"]
        _start_agent(record, layout, "kube-proxy", proxy)

    api = api_client(record)
    names = [p.name for p in plans]
    _apply(api, addons.kubelet_access())
    _apply(api, addons.local_volumes(names, workdir / "volumes"))
    _wait_for("every node Ready", lambda: _nodes_ready(api, names), record)
    _apply(api, addons.cluster_dns())
    coredns_ready = lambda: _deployment_ready(api, "kube-system", "coredns")  # noqa: E731
    _wait_for("cluster DNS (CoreDNS) Ready", coredns_ready, record)


def _start_control_plane(record: LabRun, plane: ControlPlane, binaries: ClusterBinaries) -> None:
    assert record.cluster is not None
    logs = plane.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def spawn(service: str, argv: list[str]) -> None:
        process = processes.spawn(
            CONTROL_PLANE_NODE, service, argv, env={"PATH": node_agents.AGENT_PATH},
            log=logs / f"{service}.log", cwd=plane.workdir,
        )  # fmt: skip
        record.cluster.control_plane.append(process)  # type: ignore[union-attr]
        record.save()

    spawn("etcd", plane.etcd_argv(binaries.etcd))
    spawn("kube-apiserver", plane.apiserver_argv())
    _wait_for("the API server's /readyz", lambda: plane.get("/readyz") == 200, record)
    spawn("kube-controller-manager", plane.controller_manager_argv())
    spawn("kube-scheduler", plane.scheduler_argv())
    _wait_for(
        "the default ServiceAccount",
        lambda: plane.get("/api/v1/namespaces/default/serviceaccounts/default") == 200,
        record,
    )


def _prepare_node(record: LabRun, layout: NodeLayout, plane: ControlPlane) -> None:
    """Directories, configuration, cgroups and the routes of the node's pod subnet."""
    plan, network = layout.plan, record.network
    for folder in (layout.config_dir, layout.logs, layout.cni_conf_dir, layout.pod_logs):
        folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plane.ca_file, layout.config_dir / "cluster-ca.crt")
    (layout.config_dir / "containerd.toml").write_text(node_config.containerd_config(layout))
    (layout.cni_conf_dir / "10-tpcbench.conflist").write_text(node_config.cni_config(layout))
    layout.resolv_conf.write_text("# tpc-bench lab: no resolver outside the cluster\n")
    (layout.config_dir / "kubelet.json").write_text(node_config.kubelet_config(layout))
    node_agents.make_cgroups(layout.cgroup_root)
    subnet = pod_subnet(plan)
    assert plan.netns is not None
    run(in_namespace(network.router_namespace, "ip", "route", "add", subnet, "via", plan.address))
    run(["ip", "route", "add", subnet, "via", network.router_uplink_address])
    # Other nodes' pods through the router; Service IPs need a route too, or a host-network
    # pod's connect fails (ENETUNREACH) before kube-proxy's DNAT can rewrite it.
    for destination in (node_config.POD_SUPERNET, SERVICE_RANGE):
        run(in_namespace(plan.netns, "ip", "route", "add", destination, "via", str(plan.gateway)))


def _start_agent(record: LabRun, layout: NodeLayout, service: str, argv: list[str]) -> None:
    assert record.cluster is not None and layout.plan.netns is not None
    process = node_agents.spawn_in_namespace(
        layout.plan.name, service, layout.plan.netns, argv, layout.logs / f"{service}.log"
    )
    record.cluster.agents.append(process)
    record.save()


def _apply(api: ApiClient, objects: list[dict[str, Any]]) -> None:
    from kubernetes import utils
    from kubernetes.client.exceptions import ApiException

    for obj in objects:
        try:
            utils.create_from_dict(api, obj)
        except utils.FailToCreateError as exc:
            conflicts = [e for e in exc.api_exceptions if e.status == 409]
            if len(conflicts) != len(exc.api_exceptions):
                raise UserError(
                    f"creating {obj['kind']} {obj['metadata']['name']}: {exc}"
                ) from None
        except ApiException as exc:
            raise UserError(
                f"creating {obj['kind']} {obj['metadata']['name']}: {exc.reason}"
            ) from None


def _nodes_ready(api: ApiClient, names: list[str]) -> bool:
    return all(state == "Ready" for state in node_states(api, names).values())


def node_states(api: ApiClient, names: list[str]) -> dict[str, str]:
    """node -> Ready | NotReady | <the Ready condition's reason> | missing."""
    from kubernetes import client

    found = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
    states = {}
    for name in names:
        node = found.get(name)
        if node is None:
            states[name] = "missing"
            continue
        ready = next((c for c in node.status.conditions or [] if c.type == "Ready"), None)
        states[name] = "Ready" if ready and ready.status == "True" else "NotReady"
    return states


def _deployment_ready(api: ApiClient, namespace: str, name: str) -> bool:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        status = client.AppsV1Api(api).read_namespaced_deployment(name, namespace).status
    except ApiException:
        return False
    return bool(status.ready_replicas)


def _wait_for(what: str, ready: Callable[[], bool], record: LabRun) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        try:
            if ready():
                return
        except Exception:  # the API server not answering yet is just "not yet"
            pass
        dead = _dead_processes(record)
        if dead:
            raise UserError(f"lab up --kubernetes: {dead} while waiting for {what}")
        if time.monotonic() > deadline:
            raise UserError(
                f"lab up --kubernetes: timed out waiting for {what}; logs under "
                f"{record.cluster.workdir if record.cluster else '?'}"
            )
        time.sleep(0.5)


def _socket_identity(path: Path) -> tuple[int, int] | None:
    """(inode, change time) of the socket file at `path`: a new bind is a new pair."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_ctime_ns


def _dead_processes(record: LabRun) -> str | None:
    """The first recorded control-plane process or agent that stopped, with its last line."""
    assert record.cluster is not None
    for process in [*record.cluster.control_plane, *record.cluster.agents]:
        if not processes.is_alive(process):
            last = processes.last_log_line(Path(process.log))
            return f"{process.service} on {process.node} stopped: {last}"
    return None


# -- status ----------------------------------------------------------------------------------


def cluster_status(record: LabRun, plans: Sequence[NodePlan]) -> dict[str, Any]:
    """{"server", "kubeconfig", "control_plane": {service: ok|why}, "nodes": {name: {...}}}."""
    cluster = record.cluster
    assert cluster is not None
    plane = {p.service: "ok" if processes.is_alive(p) else "stopped" for p in cluster.control_plane}
    names = [p.name for p in plans]
    try:
        states = node_states(api_client(record), names)
    except Exception as exc:  # the API server down: say so on every node
        states = {name: f"unknown (API server: {type(exc).__name__})" for name in names}
    nodes: dict[str, dict[str, str]] = {}
    for plan in plans:
        agents = {
            a.service: "ok" if processes.is_alive(a) else "stopped"
            for a in cluster.agents
            if a.node == plan.name
        }
        nodes[plan.name] = {"address": plan.address, "state": states[plan.name], **agents}
    return {
        "server": cluster.server,
        "kubeconfig": str(kubeconfig_path(record)),
        "control_plane": plane,
        "nodes": nodes,
    }


# -- stop ------------------------------------------------------------------------------------


def stop_cluster(record: LabRun, plans: Sequence[NodePlan]) -> tuple[list[str], list[str]]:
    """Node agents and their pods, the control plane, the kernel settings, the files."""
    cluster = record.cluster
    assert cluster is not None
    done: list[str] = []
    problems: list[str] = []
    started = [p for p in plans if p.name in cluster.nodes]
    for layout in layouts(record, started):
        agents = [a for a in cluster.agents if a.node == layout.plan.name]
        node_done, node_problems = node_agents.stop_node(layout, agents)
        done.extend(node_done)
        problems.extend(node_problems)
    for process in reversed(cluster.control_plane):
        if processes.stop(process):
            problems.append(f"{process.service} (pid {process.pid}) survived")
        else:
            done.append(f"stopped {process.service}")
    if cluster.etcd_data:
        shutil.rmtree(cluster.etcd_data, ignore_errors=True)
    if cluster.kernel_lease:
        problems.extend(kernel_settings.give_back(cluster.kernel_lease))
        done.append("kernel settings kubelet changes: put back (or kept for another cluster lab)")
    if not problems:
        problems.extend(node_agents.unmount_all(Path(cluster.workdir)))
        shutil.rmtree(cluster.workdir, ignore_errors=True)
        if Path(cluster.workdir).exists():
            problems.append(f"{cluster.workdir} could not be removed")
    return done, problems

"""Discovery on Kubernetes: the nodes where both server DaemonSets have a Ready pod, and (chart
values `sites:`) each site's redirector, reported apart (`redirectors()`): a campaign pairs the
hosts, never a redirector.

Needs only get/list/watch on pods (in its namespace) and get/list on nodes; without the node
permission it still works, just without site and link capacity. The API client is
orchestrator/cluster/api_client.py's (in-cluster, else kubeconfig).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cluster.api_client import SERVICE_ACCOUNT_DIR, load_api_client
from orchestrator.endpoints import DEFAULT_PORTS, Endpoint
from orchestrator.errors import UserError
from orchestrator.latency import PROBE_PORT_NAME
from orchestrator.node_labels import LINK_GBPS_LABEL, SITE_LABELS

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, CoreV1Api, V1Node, V1NodeCondition, V1Pod

log = logging.getLogger(__name__)

XROOTD_SELECTOR = "app.kubernetes.io/name=tpc-bench,app.kubernetes.io/component=xrootd"
GRIDFTP_SELECTOR = "app.kubernetes.io/name=tpc-bench,app.kubernetes.io/component=gridftp"
REDIRECTOR_SELECTOR = "app.kubernetes.io/name=tpc-bench,app.kubernetes.io/component=redirector"
# On a site's pods (its data servers and its redirector): the site's name. A site's data server
# serves HTTPS on its xroot port (a redirect names that port), so its pod names one port, root.
SITE_ANNOTATION = "tpc-bench/site"
DATA_ROOT_ANNOTATION = "tpc-bench/data-root"
HOST_DN_ANNOTATION = "tpc-bench/host-dn"
# A DaemonSet's pods share one template, so the chart gives the DN with {node} in it.
HOST_DN_TEMPLATE_ANNOTATION = "tpc-bench/host-dn-template"
# Node labels copied into Endpoint.labels (by prefix).
KEPT_LABEL_PREFIXES = ("tpc-bench/", "topology.kubernetes.io/")
DEFAULT_DATA_ROOT = "/data"
# The iperf3 sidecar beside the XRootD server (chart: baseline.enabled), where a link
# baseline's iperf3 server listens; the orchestrator runs the client in the source's pod.
IPERF3_PORT_NAME = "iperf3"


# -- pure builders: Kubernetes objects in, Endpoints out ----------------------------------------


def pod_is_ready(pod: V1Pod) -> bool:
    """Ready=True, scheduled, with a host IP, and not being deleted."""
    if pod.metadata.deletion_timestamp is not None:
        return False
    if not pod.spec.node_name or pod.status is None or not pod.status.host_ip:
        return False
    conditions = pod.status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def ready_pods_by_node(pods: Iterable[V1Pod]) -> dict[str, V1Pod]:
    """Each node's Ready pod (if a rollout leaves two, the most recently created wins)."""
    ready = sorted(
        (p for p in pods if pod_is_ready(p)),
        key=lambda p: (p.metadata.creation_timestamp is not None, p.metadata.creation_timestamp),
    )
    return {p.spec.node_name: p for p in ready}


def named_container_ports(pod: V1Pod) -> dict[str, int]:
    """Container ports by name (host network: the container port is the node's port)."""
    ports: dict[str, int] = {}
    for container in pod.spec.containers or []:
        for port in container.ports or []:
            if port.name:
                ports[port.name] = int(port.container_port)
    return ports


def _annotation(pods: Iterable[V1Pod], key: str) -> str | None:
    for pod in pods:
        value = (pod.metadata.annotations or {}).get(key)
        if value:
            return value
    return None


def _host_dn(pods: Iterable[V1Pod], node_name: str) -> str | None:
    """The DN GridFTP should expect of the node's servers: given, or from the template."""
    pods = list(pods)
    explicit = _annotation(pods, HOST_DN_ANNOTATION)
    if explicit:
        return explicit
    template = _annotation(pods, HOST_DN_TEMPLATE_ANNOTATION)
    return template.replace("{node}", node_name) if template else None


def node_site(labels: Mapping[str, str], site_labels: Iterable[str] = SITE_LABELS) -> str | None:
    return next((labels[key] for key in site_labels if labels.get(key)), None)


def node_link_gbps(labels: Mapping[str, str], label: str = LINK_GBPS_LABEL) -> float | None:
    value = labels.get(label)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        log.warning("ignoring node label %s=%r: not a number", label, value)
        return None


def build_endpoints(
    xrootd_pods: Iterable[V1Pod],
    gridftp_pods: Iterable[V1Pod],
    nodes: Mapping[str, V1Node] | None = None,
    *,
    site_labels: Iterable[str] = SITE_LABELS,
    link_label: str = LINK_GBPS_LABEL,
) -> list[Endpoint]:
    """One Endpoint per node that has a Ready XRootD pod AND a Ready GridFTP pod, by name."""
    xrootd = ready_pods_by_node(xrootd_pods)
    gridftp = ready_pods_by_node(gridftp_pods)
    site_labels = tuple(site_labels)
    endpoints = []
    for node_name in sorted(xrootd.keys() & gridftp.keys()):
        xpod, gpod = xrootd[node_name], gridftp[node_name]
        xports, gports = named_container_ports(xpod), named_container_ports(gpod)
        pod_site = _annotation((xpod,), SITE_ANNOTATION)
        https_default = xports.get("root", DEFAULT_PORTS["root"]) if pod_site else None
        ports = {
            "https": xports.get("https", https_default or DEFAULT_PORTS["https"]),
            "root": xports.get("root", DEFAULT_PORTS["root"]),
            "gridftp": gports.get("gridftp", DEFAULT_PORTS["gridftp"]),
        }
        for sidecar in (PROBE_PORT_NAME, IPERF3_PORT_NAME):  # beside the XRootD server
            if sidecar in xports:
                ports[sidecar] = xports[sidecar]
        node = (nodes or {}).get(node_name)
        node_labels: dict[str, str] = dict(node.metadata.labels or {}) if node else {}
        endpoints.append(
            Endpoint(
                name=node_name,
                address=xpod.status.host_ip,
                ports=ports,
                data_root=_annotation((xpod, gpod), DATA_ROOT_ANNOTATION) or DEFAULT_DATA_ROOT,
                host_dn=_host_dn((xpod, gpod), node_name),
                pod=f"{xpod.metadata.namespace}/{xpod.metadata.name}",
                site=pod_site or node_site(node_labels, site_labels),
                labels={k: v for k, v in node_labels.items() if k.startswith(KEPT_LABEL_PREFIXES)},
                link_gbps=node_link_gbps(node_labels, link_label),
            )
        )
    return endpoints


def redirector_name(site: str) -> str:
    """A site's redirector host: "<site>-rdr", as in the lab."""
    return f"{site}-rdr"


def build_redirectors(
    pods: Iterable[V1Pod], nodes: Mapping[str, V1Node] | None = None
) -> list[Endpoint]:
    """One Endpoint per site with a Ready redirector pod (redirector=True): its node's address,
    HTTPS and root:// on its one port. host_dn None, as the lab's: a root:// client then
    accepts the data server it is sent to, whose DN is not the redirector's."""
    by_site: dict[str, V1Pod] = {}
    ready = sorted(
        (p for p in pods if pod_is_ready(p)),
        key=lambda p: (p.metadata.creation_timestamp is not None, p.metadata.creation_timestamp),
    )
    for pod in ready:
        site = _annotation((pod,), SITE_ANNOTATION)
        if site:
            by_site[site] = pod  # during a Recreate rollout the newest Ready pod wins
    endpoints = []
    for site, pod in sorted(by_site.items()):
        root = named_container_ports(pod).get("root", DEFAULT_PORTS["root"])
        node = (nodes or {}).get(pod.spec.node_name)
        node_labels: dict[str, str] = dict(node.metadata.labels or {}) if node else {}
        endpoints.append(
            Endpoint(
                name=redirector_name(site),
                address=pod.status.host_ip,
                ports={"https": root, "root": root},
                data_root=_annotation((pod,), DATA_ROOT_ANNOTATION) or DEFAULT_DATA_ROOT,
                pod=f"{pod.metadata.namespace}/{pod.metadata.name}",
                site=site,
                redirector=True,
                labels={k: v for k, v in node_labels.items() if k.startswith(KEPT_LABEL_PREFIXES)},
            )
        )
    return endpoints


def unready_nodes(
    xrootd_pods: Iterable[V1Pod],
    gridftp_pods: Iterable[V1Pod],
    nodes: Mapping[str, V1Node] | None,
    ready: Iterable[str],
) -> dict[str, str]:
    """Nodes that run a server pod of ours but cannot be measured, and why: the node itself
    NotReady (its kubelet stopped posting status), else the first pod that is not Ready."""
    ready = set(ready)
    reasons: dict[str, str] = {}
    for component, pods in (("xrootd", xrootd_pods), ("gridftp", gridftp_pods)):
        for pod in pods:
            node_name = pod.spec.node_name
            if not node_name or node_name in ready or node_name in reasons:
                continue
            if pod.metadata.deletion_timestamp is not None:
                continue  # a rollout's old pod; its successor speaks for the node
            node = (nodes or {}).get(node_name)
            condition = _node_ready_condition(node)
            if condition is not None and condition.status != "True":
                message = condition.message or condition.reason or "no status"
                reasons[node_name] = f"node {node_name} is NotReady: {message}"
            elif not pod_is_ready(pod):
                reasons[node_name] = (
                    f"the {component} pod {pod.metadata.name} on {node_name} is not Ready"
                )
    return reasons


def _node_ready_condition(node: V1Node | None) -> V1NodeCondition | None:
    if node is None or node.status is None:
        return None
    return next((c for c in node.status.conditions or [] if c.type == "Ready"), None)


class KubernetesDiscovery:
    """The tpc-bench server DaemonSets' Ready pods, as Endpoints (one per node)."""

    def __init__(
        self,
        *,
        namespace: str | None = None,
        kubeconfig: str | Path | None = None,
        context: str | None = None,
        service_account_dir: Path = SERVICE_ACCOUNT_DIR,
        api_client: ApiClient | None = None,
        xrootd_selector: str = XROOTD_SELECTOR,
        gridftp_selector: str = GRIDFTP_SELECTOR,
        site_labels: Iterable[str] = SITE_LABELS,
        link_label: str = LINK_GBPS_LABEL,
    ) -> None:
        if api_client is None:
            api_client, default_namespace = load_api_client(
                kubeconfig, context, service_account_dir
            )
        else:
            default_namespace = "default"
        self.api_client = api_client
        self.namespace = namespace or default_namespace
        self.xrootd_selector = xrootd_selector
        self.gridftp_selector = gridftp_selector
        self.site_labels = tuple(site_labels)
        self.link_label = link_label
        self._not_ready: dict[str, str] = {}

    def discover(self) -> list[Endpoint]:
        from kubernetes import client

        core = client.CoreV1Api(self.api_client)
        xrootd = self._list_pods(core, self.xrootd_selector)
        gridftp = self._list_pods(core, self.gridftp_selector)
        nodes = self._nodes(core)
        endpoints = build_endpoints(
            xrootd,
            gridftp,
            nodes,
            site_labels=self.site_labels,
            link_label=self.link_label,
        )
        self._not_ready = unready_nodes(xrootd, gridftp, nodes, (e.name for e in endpoints))
        for name, why in self._not_ready.items():
            log.warning("kubernetes discovery: %s cannot be measured: %s", name, why)
        log.info("kubernetes discovery: %d ready node(s) in %s", len(endpoints), self.namespace)
        return endpoints

    def redirectors(self) -> list[Endpoint]:
        """Each site's Ready redirector (chart values `sites:`), apart from discover()'s
        hosts; none without sites."""
        from kubernetes import client

        core = client.CoreV1Api(self.api_client)
        pods = self._list_pods(core, REDIRECTOR_SELECTOR)
        endpoints = build_redirectors(pods, self._nodes(core) if pods else None)
        log.info(
            "kubernetes discovery: %d site redirector(s) in %s", len(endpoints), self.namespace
        )
        return endpoints

    def not_ready(self) -> dict[str, str]:
        """Nodes with a server pod of ours that cannot be measured, and why (last discover)."""
        return dict(self._not_ready)

    def _list_pods(self, core: CoreV1Api, selector: str) -> list[V1Pod]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return list(core.list_namespaced_pod(self.namespace, label_selector=selector).items)
        except HTTPError as exc:
            host = self.api_client.configuration.host
            raise UserError(f"cannot reach the Kubernetes API at {host}: {exc}") from exc
        except ApiException as exc:
            raise UserError(
                f"cannot list pods ({selector}) in namespace {self.namespace}: "
                f"{exc.status} {exc.reason}; the orchestrator needs get/list/watch on pods"
            ) from exc

    def _nodes(self, core: CoreV1Api) -> dict[str, V1Node] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return {n.metadata.name: n for n in core.list_node().items}
        except ApiException as exc:
            if exc.status != 403:
                raise
            log.warning("may not list nodes (403): endpoints get no site or link capacity")
            return None

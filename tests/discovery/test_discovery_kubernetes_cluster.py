"""Kubernetes discovery against a real API server, with kwok playing the nodes' kubelets.

Plain manifests stand in for the Helm chart: two host-network DaemonSets (XRootD, GridFTP)
on the nodes labelled `tpc-bench/network=100000`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config import new_client_from_config

from orchestrator.discovery import DISCOVERY_BACKENDS, KubernetesDiscovery
from orchestrator.discovery.kubernetes import (
    GRIDFTP_SELECTOR,
    XROOTD_SELECTOR,
    pod_is_ready,
)
from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.kube.control_plane import write_kubeconfig
from tests.support.simcluster import SimCluster, fake_node

pytestmark = pytest.mark.cluster

NAMESPACE = "tpc-bench-discovery"
NETWORK_LABEL = {"tpc-bench/network": "100000"}
# Not the defaults, so the test proves the ports are read from the pods.
XROOTD_PORTS = {"https": 9443, "root": 2094}
GRIDFTP_PORTS = {"gridftp": 3811}
PORTS = XROOTD_PORTS | GRIDFTP_PORTS
SITES = {"sim-node-1": "site-a", "sim-node-2": "site-a", "sim-node-3": "site-b"}

Eventually = Callable[..., Any]


@dataclass
class Servers:
    cluster: SimCluster
    api: client.ApiClient

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def discovery(self) -> KubernetesDiscovery:
        return KubernetesDiscovery(kubeconfig=self.cluster.kubeconfig, namespace=NAMESPACE)

    def pod_on(self, selector: str, node: str) -> client.V1Pod:
        pods = self.core.list_namespaced_pod(
            NAMESPACE, label_selector=selector, field_selector=f"spec.nodeName={node}"
        ).items
        assert len(pods) == 1, [p.metadata.name for p in pods]
        return pods[0]

    def ready_nodes(self, selector: str) -> set[str]:
        pods = self.core.list_namespaced_pod(NAMESPACE, label_selector=selector).items
        return {p.spec.node_name for p in pods if pod_is_ready(p)}


def daemonset(component: str, ports: dict[str, int]) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "tpc-bench", "app.kubernetes.io/component": component}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": f"tpc-bench-{component}", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {"tpc-bench/data-root": "/srv/tpc"}},
                "spec": {
                    "hostNetwork": True,
                    "nodeSelector": NETWORK_LABEL,
                    "containers": [
                        {
                            "name": component,
                            "image": f"registry.invalid/tpc-bench-{component}:test",
                            "ports": [
                                {"name": name, "containerPort": port, "protocol": "TCP"}
                                for name, port in ports.items()
                            ],
                        }
                    ],
                },
            },
        },
    }


def node_labels(name: str) -> dict[str, str]:
    return NETWORK_LABEL | {"tpc-bench/site": SITES[name], "tpc-bench/link-gbps": "100"}


def expected(name: str, ip: str) -> Endpoint:
    labels = {k: v for k, v in node_labels(name).items()}
    return Endpoint(
        name=name,
        address=ip,
        ports=PORTS,
        data_root="/srv/tpc",
        site=SITES[name],
        labels=labels,
        link_gbps=100.0,
    )


BASELINE = [expected(f"sim-node-{i}", f"10.88.0.{i}") for i in (1, 2, 3)]


def nodes_of(endpoints: list[Endpoint]) -> list[Endpoint]:
    """The endpoints without their XRootD pod's name (a DaemonSet's pods get random names)."""
    return [replace(e, pod=None) for e in endpoints]


def same_as_baseline(endpoints: list[Endpoint]) -> bool:
    return nodes_of(endpoints) == BASELINE


@pytest.fixture(scope="module")
def servers(sim_cluster: SimCluster, eventually: Eventually) -> Iterator[Servers]:
    api = sim_cluster.api_client()
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    for i in (1, 2, 3):
        name = f"sim-node-{i}"
        core.create_node(fake_node(name, f"10.88.0.{i}", node_labels(name)))
    core.create_node(fake_node("sim-node-4", "10.88.0.4"))  # not a 100G node: no servers
    apps = client.AppsV1Api(api)
    apps.create_namespaced_daemon_set(NAMESPACE, daemonset("xrootd", XROOTD_PORTS))
    apps.create_namespaced_daemon_set(NAMESPACE, daemonset("gridftp", GRIDFTP_PORTS))
    servers = Servers(sim_cluster, api)
    want = {"sim-node-1", "sim-node-2", "sim-node-3"}
    for selector in (XROOTD_SELECTOR, GRIDFTP_SELECTOR):
        eventually(lambda s=selector: servers.ready_nodes(s), want.__eq__, f"{selector} Ready")
    yield servers
    api.close()


def test_discovery_returns_exactly_the_ready_nodes(servers: Servers) -> None:
    found = servers.discovery().discover()
    assert nodes_of(found) == BASELINE
    # each node's XRootD pod, where a link baseline runs iperf3 (orchestrator/prelim/baseline.py)
    pods = [servers.pod_on(XROOTD_SELECTOR, e.name).metadata.name for e in found]
    assert [e.pod for e in found] == [f"{NAMESPACE}/{name}" for name in pods]


def test_registry_builds_the_kubernetes_backend(servers: Servers) -> None:
    discovery = DISCOVERY_BACKENDS["kubernetes"](
        kubeconfig=servers.cluster.kubeconfig, namespace=NAMESPACE
    )
    assert [e.name for e in discovery.discover()] == ["sim-node-1", "sim-node-2", "sim-node-3"]


def set_ready(servers: Servers, pod: client.V1Pod, status: str) -> None:
    """What a kubelet does when a readiness probe fails or recovers."""
    servers.core.patch_namespaced_pod_status(
        pod.metadata.name,
        NAMESPACE,
        {"status": {"conditions": [{"type": "Ready", "status": status}]}},
    )


def test_a_node_whose_gridftp_pod_is_not_ready_is_left_out(
    servers: Servers, eventually: Eventually
) -> None:
    pod = servers.pod_on(GRIDFTP_SELECTOR, "sim-node-2")
    discovery = servers.discovery()
    set_ready(servers, pod, "False")
    try:
        # Its XRootD pod is still Ready: one Ready server is not enough.
        assert "sim-node-2" in servers.ready_nodes(XROOTD_SELECTOR)
        names = eventually(
            lambda: [e.name for e in discovery.discover()],
            ["sim-node-1", "sim-node-3"].__eq__,
            "sim-node-2 left out",
        )
        assert names == ["sim-node-1", "sim-node-3"]
    finally:
        set_ready(servers, pod, "True")
    eventually(discovery.discover, same_as_baseline, "sim-node-2 back")


def test_a_node_that_appears_later_is_picked_up_and_one_that_goes_is_dropped(
    servers: Servers, eventually: Eventually
) -> None:
    discovery = servers.discovery()
    labels = NETWORK_LABEL | {"topology.kubernetes.io/zone": "zone-5"}
    servers.core.create_node(fake_node("sim-node-5", "10.88.0.5", labels))
    try:
        endpoints = eventually(discovery.discover, lambda es: len(es) == 4, "sim-node-5 discovered")
        assert nodes_of(endpoints[:3]) == BASELINE
        assert replace(endpoints[3], pod=None) == Endpoint(
            name="sim-node-5",
            address="10.88.0.5",
            ports=PORTS,
            data_root="/srv/tpc",
            site="zone-5",  # no tpc-bench/site label: the zone names the site
            labels={"tpc-bench/network": "100000", "topology.kubernetes.io/zone": "zone-5"},
        )
        # The node stops being a 100G node: the DaemonSets remove its pods.
        servers.core.patch_node("sim-node-5", {"metadata": {"labels": {"tpc-bench/network": None}}})
        eventually(discovery.discover, same_as_baseline, "sim-node-5 dropped")
    finally:
        servers.core.delete_node("sim-node-5")


def request_token(servers: Servers, account: str) -> str:
    """A short-lived ServiceAccount token from the TokenRequest API (what a pod gets)."""
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    response = servers.core.create_namespaced_service_account_token(account, NAMESPACE, request)
    return str(response.status.token)


def service_account_kubeconfig(servers: Servers, account: str, tmp_path: Path) -> Path:
    """A kubeconfig holding a token for `account`, verifying the API server against the CA."""
    path = tmp_path / f"{account}.kubeconfig"
    token = request_token(servers, account)
    cluster = servers.cluster
    write_kubeconfig(path, cluster.server, cluster.ca_file, token, account, namespace=NAMESPACE)
    return path


def grant(servers: Servers, account: str, *, nodes: bool) -> None:
    """The orchestrator's permissions: pods in its namespace; optionally nodes, cluster-wide."""
    rbac = client.RbacAuthorizationV1Api(servers.api)
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    servers.core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": account}})
    rbac.create_namespaced_role(
        NAMESPACE,
        {
            "metadata": {"name": account},
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
            ],
        },
    )
    rbac.create_namespaced_role_binding(
        NAMESPACE,
        {
            "metadata": {"name": account},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": subject,
        },
    )
    if nodes:
        rbac.create_cluster_role(
            {
                "metadata": {"name": account},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
            }
        )
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": account},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": account,
                },
                "subjects": subject,
            }
        )


def discover_when_authorized(kubeconfig: Path, eventually: Eventually) -> list[Endpoint]:
    """Discovery through `kubeconfig`, once the new RBAC bindings have reached the authorizer."""

    def attempt() -> list[Endpoint] | str:
        try:
            return KubernetesDiscovery(kubeconfig=kubeconfig).discover()  # namespace: context's
        except UserError as exc:
            return str(exc)

    return eventually(attempt, lambda r: isinstance(r, list), "discovery authorized")


def test_least_privilege_service_account(
    servers: Servers, eventually: Eventually, tmp_path: Path
) -> None:
    grant(servers, "tpc-bench-orchestrator", nodes=True)
    kubeconfig = service_account_kubeconfig(servers, "tpc-bench-orchestrator", tmp_path)

    assert nodes_of(discover_when_authorized(kubeconfig, eventually)) == BASELINE

    # Least privilege: nothing beyond pods here and nodes.
    api = new_client_from_config(config_file=str(kubeconfig))
    core = client.CoreV1Api(api)
    for forbidden in (
        lambda: core.list_namespaced_secret(NAMESPACE),
        lambda: core.list_namespaced_pod("default"),
        lambda: core.delete_namespaced_pod(
            servers.pod_on(XROOTD_SELECTOR, "sim-node-1").metadata.name, NAMESPACE
        ),
        lambda: client.AppsV1Api(api).list_namespaced_daemon_set(NAMESPACE),
    ):
        with pytest.raises(ApiException) as denied:
            forbidden()
        assert denied.value.status == 403
    api.close()


def test_without_node_permission_discovery_works_without_sites(
    servers: Servers, eventually: Eventually, tmp_path: Path
) -> None:
    grant(servers, "pods-only", nodes=False)
    kubeconfig = service_account_kubeconfig(servers, "pods-only", tmp_path)

    endpoints = discover_when_authorized(kubeconfig, eventually)

    assert [(e.name, e.address, e.ports) for e in endpoints] == [
        (e.name, e.address, e.ports) for e in BASELINE
    ]
    assert all(e.site is None and e.link_gbps is None and e.labels == {} for e in endpoints)


def test_in_cluster_configuration_comes_before_the_kubeconfig(
    servers: Servers, eventually: Eventually, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the kubelet mounts into a pod, and the environment it sets.
    grant(servers, "in-cluster", nodes=True)
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text(request_token(servers, "in-cluster"))
    (mount / "ca.crt").write_bytes(servers.cluster.ca_file.read_bytes())
    (mount / "namespace").write_text(NAMESPACE)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(servers.cluster.api_port))
    # A kubeconfig that also works but looks in the empty "default" namespace.
    decoy = tmp_path / "decoy.kubeconfig"
    cluster = servers.cluster
    write_kubeconfig(decoy, cluster.server, cluster.ca_file, cluster.admin_token, "admin")
    monkeypatch.setenv("KUBECONFIG", str(decoy))
    assert KubernetesDiscovery(kubeconfig=decoy).discover() == []

    def attempt() -> list[Endpoint] | str:
        try:
            discovery = KubernetesDiscovery(service_account_dir=mount)
            assert discovery.namespace == NAMESPACE
            return discovery.discover()
        except UserError as exc:
            return str(exc)

    found = eventually(attempt, lambda r: isinstance(r, list), "in-cluster discovery")
    assert nodes_of(found) == BASELINE

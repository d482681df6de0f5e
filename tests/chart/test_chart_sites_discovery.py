"""Discovery of the chart's sites (orchestrator/discovery/kubernetes.py), from the pods the
chart renders with ci/sites-values.yaml placed on nodes as a scheduler would: the site's data
servers as hosts with their site, the redirectors apart, and nothing changed without sites."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubernetes import client

from orchestrator.discovery.kubernetes import (
    KubernetesDiscovery,
    build_endpoints,
    build_redirectors,
)
from orchestrator.endpoints import Endpoint
from tests.support.helm_chart import Helm, find

T0 = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)
NODES = {"n1": "10.99.26.2", "n2": "10.99.27.2", "n3": "10.99.28.2"}


def placed(
    template: dict[str, Any], node: str, *, ready: bool = True, age: int = 0
) -> client.V1Pod:
    """A pod of `template` (a rendered pod template) running on `node`."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**template["metadata"], "name": f"p-{node}-{age}", "namespace": "tpc",
                     "creationTimestamp": (T0 + dt.timedelta(seconds=age)).isoformat()},
        "spec": {**template["spec"], "nodeName": node},
        "status": {"hostIP": NODES[node], "phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }  # fmt: skip
    api = client.ApiClient()
    return api._ApiClient__deserialize(body, "V1Pod")  # type: ignore[attr-defined]


def node(name: str, labels: dict[str, str]) -> client.V1Node:
    return client.V1Node(metadata=client.V1ObjectMeta(name=name, labels=labels))


def templates(helm: Helm, *values: str) -> dict[str, dict[str, Any]]:
    objects = helm.template(*values)
    found = {
        "xrootd": find(objects, "DaemonSet", "-xrootd"),
        "gridftp": find(objects, "DaemonSet", "-gridftp"),
    }
    if values:
        found["xrootd-a"] = find(objects, "DaemonSet", "-xrootd-a")
        found["redirector-a"] = find(objects, "Deployment", "-redirector-a")
    return {k: v["spec"]["template"] for k, v in found.items()}


def test_a_sites_data_servers_are_hosts_of_their_site_with_https_on_the_xroot_port(
    helm: Helm,
) -> None:
    pods = templates(helm, "sites-values.yaml")
    nodes = {n: node(n, {"tpc-bench.io/site": "a"}) for n in ("n1", "n2")} | {"n3": node("n3", {})}
    xrootd = [placed(pods["xrootd-a"], "n1"), placed(pods["xrootd-a"], "n2"),
              placed(pods["xrootd"], "n3")]  # fmt: skip
    gridftp = [placed(pods["gridftp"], n) for n in NODES]
    endpoints = {e.name: e for e in build_endpoints(xrootd, gridftp, nodes)}
    assert sorted(endpoints) == ["n1", "n2", "n3"]
    for name in ("n1", "n2"):
        assert endpoints[name].site == "a" and not endpoints[name].redirector
        assert endpoints[name].ports["https"] == endpoints[name].ports["root"] == 1094
        assert endpoints[name].ports["gridftp"] == 2811
    assert endpoints["n3"].site is None
    assert (endpoints["n3"].ports["https"], endpoints["n3"].ports["root"]) == (8443, 1094)


def test_without_sites_discovery_finds_what_it_always_found(helm: Helm) -> None:
    pods = templates(helm)
    xrootd = [placed(pods["xrootd"], n) for n in NODES]
    gridftp = [placed(pods["gridftp"], n) for n in NODES]
    endpoints = build_endpoints(xrootd, gridftp, {n: node(n, {}) for n in NODES})
    assert [e.name for e in endpoints] == sorted(NODES)
    for endpoint in endpoints:
        assert endpoint.site is None and not endpoint.redirector
        assert {k: endpoint.ports[k] for k in ("https", "root", "gridftp")} == {
            "https": 8443, "root": 1094, "gridftp": 2811,
        }  # fmt: skip
    assert build_redirectors([]) == []


def test_each_sites_ready_redirector_is_reported_apart(helm: Helm) -> None:
    pods = templates(helm, "sites-values.yaml")
    nodes = {"n1": node("n1", {"tpc-bench.io/site": "a", "topology.kubernetes.io/zone": "z1"})}
    redirectors = build_redirectors(
        [placed(pods["redirector-a"], "n2", age=0), placed(pods["redirector-a"], "n1", age=5),
         placed(pods["redirector-a"], "n3", age=9, ready=False)],
        nodes,
    )  # fmt: skip
    assert redirectors == [
        Endpoint(
            name="a-rdr",
            address=NODES["n1"],  # the newest Ready pod (a Recreate rollout's successor)
            ports={"https": 1095, "root": 1095},
            data_root="/data",
            host_dn=None,
            pod="tpc/p-n1-5",
            site="a",
            redirector=True,
            labels={"topology.kubernetes.io/zone": "z1"},
        )
    ]


class _Core:
    """The one CoreV1Api call redirectors() makes for its pods, and the nodes."""

    def __init__(self, pods: list[client.V1Pod]) -> None:
        self.pods = pods
        self.selectors: list[str] = []

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Any:
        self.selectors.append(label_selector)
        return client.V1PodList(items=self.pods)

    def list_node(self) -> Any:
        return client.V1NodeList(items=[node("n1", {})])


def test_redirectors_asks_for_the_redirector_pods_only(helm: Helm, monkeypatch: Any) -> None:
    pods = templates(helm, "sites-values.yaml")
    core = _Core([placed(pods["redirector-a"], "n1")])
    monkeypatch.setattr(client, "CoreV1Api", lambda api=None: core)
    discovery = KubernetesDiscovery(api_client=client.ApiClient(), namespace="tpc")
    assert [(r.name, r.address) for r in discovery.redirectors()] == [("a-rdr", NODES["n1"])]
    assert core.selectors == [
        "app.kubernetes.io/name=tpc-bench,app.kubernetes.io/component=redirector"
    ]

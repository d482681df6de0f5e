"""The NetworkPolicies as rendered: who may reach each part on the pod network, derived from
the rendered pods themselves, so a label or port change shows (docs/install.md, Security)."""

from __future__ import annotations

from typing import Any

from tests.support.helm_chart import Helm, find


def pod_templates(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod the chart runs (workloads' templates and helm test Pods), by object name."""
    pods = {}
    for item in objects:
        if item["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            pods[item["metadata"]["name"]] = item["spec"]["template"]
        elif item["kind"] == "Pod":
            pods[item["metadata"]["name"]] = item
    return pods


def selects(selector: dict[str, Any], pod: dict[str, Any]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector  # all the chart's selectors use
    labels = pod["metadata"].get("labels", {})
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def policies_of(objects: list[dict[str, Any]], pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        o["spec"]
        for o in objects
        if o["kind"] == "NetworkPolicy" and selects(o["spec"]["podSelector"], pod)
    ]


def container_port(pod: dict[str, Any], port: int | str) -> int:
    """The container port a policy's (or Service's) port names, which must exist on the pod."""
    ports = [p for c in pod["spec"]["containers"] for p in c.get("ports", [])]
    found = [p["containerPort"] for p in ports if port in (p.get("name"), p["containerPort"])]
    assert len(found) == 1, (port, ports)
    return int(found[0])


def allowed(
    objects: list[dict[str, Any]], pod_name: str
) -> tuple[set[str], list[dict[str, Any]], set[int]]:
    """Who the one policy selecting `pod_name` lets in: the chart's pods its podSelectors
    select (by name suffix), the peers that are not pods of ours, and the ports it opens."""
    pods = pod_templates(objects)
    pod = pods[pod_name]
    (policy,) = policies_of(objects, pod)
    assert policy["policyTypes"] == ["Ingress"]
    ours, others, ports = set(), [], set()
    for rule in policy["ingress"]:
        ports |= {container_port(pod, p["port"]) for p in rule["ports"]}
        assert all(p["protocol"] == "TCP" for p in rule["ports"])
        for peer in rule.get("from", [{"anyone": True}]):
            if set(peer) == {"podSelector"}:
                chosen = {n for n, p in pods.items() if selects(peer["podSelector"], p)}
                assert chosen, f"{pod_name}: {peer} selects no pod of the chart"
                ours |= {n.removeprefix("rel-tpc-bench-") for n in chosen}
            else:
                others.append(peer)
    return ours, others, ports


def test_network_policies_let_each_pod_network_part_be_reached_only_by_its_clients(
    helm: Helm,
) -> None:
    objects = helm.template()
    pods = pod_templates(objects)
    assert allowed(objects, "rel-tpc-bench-postgresql") == ({"webapp"}, [], {5432})
    assert allowed(objects, "rel-tpc-bench-webapp") == (
        {"orchestrator", "test-webapp", "test-discovery"}, [], {8000}
    )  # fmt: skip
    assert allowed(objects, "rel-tpc-bench-signer") == (set(), [], set())  # nobody at all
    # what the Services send is what the policies let in
    for part in ("postgresql", "webapp"):
        (port,) = find(objects, "Service", f"-{part}")["spec"]["ports"]
        opened = allowed(objects, f"rel-tpc-bench-{part}")[2]
        assert container_port(pods[f"rel-tpc-bench-{part}"], port["targetPort"]) in opened
    # the servers use the node's network (outside NetworkPolicy); the orchestrator is open
    # to its metrics scrapers
    for name in ("rel-tpc-bench-xrootd", "rel-tpc-bench-gridftp", "rel-tpc-bench-orchestrator"):
        assert policies_of(objects, pods[name]) == [], name
    assert pods["rel-tpc-bench-xrootd"]["spec"]["hostNetwork"] is True


def test_network_policies_admit_the_ingress_a_published_service_and_named_peers(
    helm: Helm,
) -> None:
    # the Ingress controller: by default every pod of every namespace (the chart cannot know)
    ours, others, ports = allowed(helm.template("ingress-values.yaml"), "rel-tpc-bench-webapp")
    assert ours == {"orchestrator", "test-webapp", "test-discovery"} and ports == {8000}
    assert others == [{"namespaceSelector": {}}]
    objects = helm.template("network-policy-values.yaml")
    ours, others, ports = allowed(objects, "rel-tpc-bench-webapp")
    ingress_nginx = {"kubernetes.io/metadata.name": "ingress-nginx"}
    assert others == [
        {"namespaceSelector": {"matchLabels": ingress_nginx}},
        {"ipBlock": {"cidr": "192.0.2.0/24"}},  # networkPolicy.webappFrom
        {"anyone": True},  # a NodePort publishes the webapp, on its port only
    ]
    assert ours == {"orchestrator", "test-webapp", "test-discovery"} and ports == {8000}
    signer = pod_templates(objects)["rel-tpc-bench-signer"]
    ours, others, ports = allowed(objects, "rel-tpc-bench-signer")
    assert ours == set() and [set(peer) for peer in others] == [
        {"namespaceSelector", "podSelector"}
    ]  # Prometheus, on the port its annotation names
    assert ports == {int(signer["metadata"]["annotations"]["prometheus.io/port"])}


def test_network_policies_are_off_by_a_value(helm: Helm) -> None:
    assert sum(o["kind"] == "NetworkPolicy" for o in helm.template()) == 3
    assert not [o for o in helm.template(**{"networkPolicy.enabled": "false"})
                if o["kind"] == "NetworkPolicy"]  # fmt: skip
    external = helm.template("external-database-values.yaml")
    assert [o["metadata"]["name"] for o in external if o["kind"] == "NetworkPolicy"] == [
        "rel-tpc-bench-webapp", "rel-tpc-bench-signer"
    ]  # fmt: skip

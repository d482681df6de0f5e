"""Every object the chart renders, for the default values and each ci/ scenario, is accepted by
the real API server (a server-side dry run: admission, validation and defaulting included)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.helm_chart import CHART, SCENARIOS, Cluster, Helm

pytestmark = pytest.mark.cluster

# cert-manager's and the Prometheus Operator's kinds need their CRDs, which the test cluster
# does not have (third-party; cert-manager's are not on the registries we can reach); those
# objects are checked rendered (test_chart_monitoring.py), not dry-run.
NEEDS_CRDS = {"cert-manager.io/v1", "monitoring.coreos.com/v1"}


def dry_run_create(cluster: Cluster, item: dict[str, Any], namespace: str) -> None:
    """Create `item` as a server-side dry run with strict field validation: a misspelled or
    misplaced field is an error, not a warning the server drops (as kubectl --dry-run=server)."""
    resource = cluster.dynamic().resources.get(api_version=item["apiVersion"], kind=item["kind"])
    where = {"namespace": namespace} if resource.namespaced else {}
    resource.create(body=item, dry_run="All", query_params=[("fieldValidation", "Strict")], **where)


@pytest.mark.parametrize("scenario", [None, *SCENARIOS])
def test_every_rendered_object_is_accepted_by_the_api_server(
    helm: Helm, cluster: Cluster, scenario: str | None
) -> None:
    namespace = f"tpcb-dry-{uuid.uuid4().hex[:6]}"
    objects = helm.template(*([scenario] if scenario else []), namespace=namespace)
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        # Pods (the helm test hooks) are admitted only once their ServiceAccount exists, so
        # the ServiceAccounts are created for real (accepted all the same).
        checked, skipped = [], []
        for item in objects:
            if item["kind"] == "ServiceAccount":
                cluster.core.create_namespaced_service_account(namespace, item)
                checked.append(item["kind"])
        for item in objects:
            if item["kind"] == "ServiceAccount":
                continue
            if item["apiVersion"] in NEEDS_CRDS:
                skipped.append(item["kind"])
                continue
            try:
                dry_run_create(cluster, item, namespace)
            except ApiException as exc:
                pytest.fail(f"{item['kind']} {item['metadata']['name']}: {exc.status} {exc.body}")
            checked.append(item["kind"])
        assert {"DaemonSet", "Deployment", "ClusterRole", "Pod", "NetworkPolicy"} <= set(checked)
        if scenario == "cert-manager-values.yaml":
            assert sorted(skipped) == ["Certificate", "Issuer"]
        elif scenario == "monitoring-values.yaml":
            assert sorted(skipped) == ["PodMonitor", "PrometheusRule", "ServiceMonitor"]
        else:
            assert skipped == []
    finally:
        cluster.core.delete_namespace(namespace)


def test_the_dry_run_rejects_a_misspelled_field(helm: Helm, cluster: Cluster) -> None:
    namespace = f"tpcb-dry-{uuid.uuid4().hex[:6]}"
    objects = helm.template(namespace=namespace)
    signer = next(
        o for o in objects if o["kind"] == "Deployment" and "signer" in o["metadata"]["name"]
    )
    signer["spec"]["template"]["spec"]["hostNetwrok"] = True
    cluster.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    try:
        with pytest.raises(ApiException) as caught:
            dry_run_create(cluster, signer, namespace)
        assert caught.value.status == 400
        message = json.loads(caught.value.body)["message"]
        assert 'unknown field "spec.template.spec.hostNetwrok"' in message
    finally:
        cluster.core.delete_namespace(namespace)


def test_the_notes_give_commands_that_paste(cluster_helm: Helm) -> None:
    """NOTES.txt as `helm install` prints it: one label selector for every label, and the
    Ingress's address in the run-now command when the dashboard is published through one."""
    installed = cluster_helm.run(
        "install", "notes", str(CHART), "--namespace", "default", "--dry-run=server",
        "--set", "nodes.selector.extra=yes", "--set", "webapp.ingress.enabled=true",
        "--set", "webapp.ingress.host=tpc.example.org",
    ).stdout  # fmt: skip
    notes = installed[installed.index("NOTES:") :]
    assert "kubectl get nodes -l 'extra=yes,tpc-bench.io/network=100000'" in notes
    assert "http://tpc.example.org/api/v1/campaigns/" in notes
    assert "127.0.0.1:8000" not in notes  # no port-forward was printed, so none is used


def as_pod(item: dict[str, Any]) -> dict[str, Any]:
    """The pod a workload would make (its template as a Pod), or a Pod as it is."""
    if item["kind"] == "Pod":
        return item
    template = item["spec"]["template"]
    spec = dict(template["spec"])
    claims = item["spec"].get("volumeClaimTemplates", [])  # a StatefulSet's, as its pods get
    spec["volumes"] = spec.get("volumes", []) + [
        {"name": c["metadata"]["name"], "persistentVolumeClaim": {"claimName": "claim"}}
        for c in claims
    ]
    name = f"{item['metadata']['name']}-pod"[:63]
    metadata = {"name": name, "labels": template["metadata"].get("labels", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_only_the_host_network_pods_need_the_privileged_pod_security_level(
    helm: Helm, cluster: Cluster, level: str
) -> None:
    """docs/install.md (Security, Pod Security): the API server's own PodSecurity admission
    refuses the servers' (and the prelim Job's) pods below `privileged`, for the host network
    and its ports, and admits every other pod of the chart even at `restricted`."""
    namespace = f"tpcb-pss-{uuid.uuid4().hex[:6]}"
    objects = helm.template("prelim-values.yaml", namespace=namespace)
    labels = {"pod-security.kubernetes.io/enforce": level}
    cluster.core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace, labels=labels))
    )
    try:
        for item in objects:
            if item["kind"] == "ServiceAccount":
                cluster.core.create_namespaced_service_account(namespace, item)
        refused, admitted = {}, []
        for item in objects:
            if item["kind"] not in ("Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"):
                continue
            try:
                dry_run_create(cluster, as_pod(item), namespace)
                admitted.append(item["metadata"]["name"])
            except ApiException as exc:
                assert exc.status == 403, exc.body
                refused[item["metadata"]["name"]] = json.loads(exc.body)["message"]
        assert sorted(refused) == ["rel-tpc-bench-gridftp", "rel-tpc-bench-prelim",
                                   "rel-tpc-bench-xrootd"]  # fmt: skip
        for name, message in refused.items():
            assert f'violates PodSecurity "{level}:latest": host namespaces (hostNetwork=true)' in (
                message
            )
            # the host network makes a container's ports the node's (hostPort), also baseline's
            assert ("hostPort" in message) == (not name.endswith("-prelim")), message
        others = {"postgresql", "webapp", "signer", "orchestrator", "test-webapp", "test-discovery"}
        assert {f"rel-tpc-bench-{name}" for name in others} <= set(admitted)
    finally:
        cluster.core.delete_namespace(namespace)

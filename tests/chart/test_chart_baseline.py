"""The link baseline on a cluster, as rendered (baseline.enabled, ci/baseline-values.yaml): an
iperf3 server beside XRootD on every node, where discovery finds it; exec in the server pods
for the orchestrator; the campaign settings the orchestrator reads. Run for real on kubelets
in test_chart_on_kubelets.py; off by default (test_chart_render.py: the ports and the Role)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes.config import new_client_from_config

from orchestrator.campaign.settings import load_settings
from orchestrator.cluster.pod_exec import run_in_pod
from orchestrator.discovery.kubernetes import IPERF3_PORT_NAME
from orchestrator.errors import UserError
from orchestrator.prelim.baseline import iperf3_client_argv
from tests.support.helm_chart import CHART, Cluster, Helm, find

EXEC_RULE = {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]}


def pod_spec(objects: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    return find(objects, kind, suffix)["spec"]["template"]["spec"]


def containers(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in spec["containers"]}


def baseline_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    orchestrator = containers(pod_spec(objects, "Deployment", "-orchestrator"))["orchestrator"]
    return {e["name"]: e["value"] for e in orchestrator["env"] if "BASELINE" in e["name"]}


def test_an_iperf3_server_runs_beside_xrootd_on_the_nodes_network(helm: Helm) -> None:
    objects = helm.template("baseline-values.yaml")
    spec = pod_spec(objects, "DaemonSet", "-xrootd")
    server = containers(spec)
    iperf3 = server["iperf3"]
    assert iperf3["command"] == ["/usr/bin/tini", "--", "iperf3"]
    assert iperf3["args"] == ["--server", "--bind=$(HOST_IP)", "--port=5201"]
    assert iperf3["image"] == server["xrootd"]["image"]  # the XRootD image carries iperf3
    # discovery reads the port by this name (Endpoint.ports["iperf3"])
    assert iperf3["ports"] == [{"name": IPERF3_PORT_NAME, "containerPort": 5201}]
    assert iperf3["readinessProbe"] == {"tcpSocket": {"port": "iperf3"}, "periodSeconds": 30}
    resources = iperf3["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert iperf3["securityContext"] == server["xrootd"]["securityContext"]
    # iperf3 writes each stream's buffer under /tmp: a volume of its own, the root read-only
    assert iperf3["volumeMounts"] == [{"name": "iperf3-tmp", "mountPath": "/tmp"}]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["iperf3-tmp"] == {"name": "iperf3-tmp", "emptyDir": {"sizeLimit": "64Mi"}}
    assert "iperf3" not in containers(pod_spec(objects, "DaemonSet", "-gridftp"))
    # another port, and the lab's smaller share
    moved = helm.template("lab-values.yaml", "baseline-values.yaml", **{"baseline.port": "5301"})
    iperf3 = containers(pod_spec(moved, "DaemonSet", "-xrootd"))["iperf3"]
    assert iperf3["args"][-1] == "--port=5301" and iperf3["ports"][0]["containerPort"] == 5301
    assert iperf3["resources"]["limits"] == {"cpu": "100m", "memory": "128Mi"}


def test_the_orchestrator_may_exec_in_the_release_pods_only_with_the_baseline(
    helm: Helm,
) -> None:
    default = helm.template()
    assert EXEC_RULE not in find(default, "Role", "-orchestrator")["rules"]
    assert not [o for o in default if o["kind"].startswith("ValidatingAdmissionPolicy")]
    objects = helm.template("baseline-values.yaml")
    assert EXEC_RULE in find(objects, "Role", "-orchestrator")["rules"]
    cluster_rules = find(objects, "ClusterRole", "-orchestrator")["rules"]
    assert not any("pods/exec" in rule["resources"] for rule in cluster_rules)  # namespace only


def test_every_campaign_takes_the_baselines_the_values_ask_for(helm: Helm, tmp_path: Path) -> None:
    assert baseline_env(helm.template()) == {}  # the orchestrator's defaults: no baselines
    env = baseline_env(helm.template("baseline-values.yaml"))
    assert env == {"TPCBENCH_BASELINE": "true", "TPCBENCH_BASELINE_SECONDS": "5",
                   "TPCBENCH_BASELINE_OMIT": "2"}  # fmt: skip
    config = tmp_path / "config.toml"
    config.write_text("")
    settings = load_settings(env=env, config_path=config)  # what the orchestrator reads
    assert (settings.baseline, settings.baseline_seconds, settings.baseline_omit) == (True, 5, 2)
    # the server and exec stay for `tpcbench baseline` by hand; campaigns take none
    by_hand = helm.template("baseline-values.yaml", **{"baseline.everyCampaign": "false"})
    assert baseline_env(by_hand)["TPCBENCH_BASELINE"] == "false"
    assert "iperf3" in containers(pod_spec(by_hand, "DaemonSet", "-xrootd"))


@pytest.mark.parametrize(("setting", "complaint"), [
    ({"baseline.omit": "5"}, "baseline.omit (5 s of slow start left out) must be fewer than "
                             "baseline.seconds (5 s measured)"),
    ({"baseline.seconds": "0"}, "baseline.seconds"),
    ({"baseline.everyCampaing": "true"}, "Additional property everyCampaing is not allowed"),
])  # fmt: skip
def test_values_a_baseline_cannot_run_with_are_refused(
    helm: Helm, setting: dict[str, str], complaint: str
) -> None:
    argv = ["template", "rel", str(CHART), "--kube-version", "1.31.4",
            "--values", str(CHART / "ci" / "baseline-values.yaml")]  # fmt: skip
    for key, value in setting.items():
        argv += ["--set", f"{key}={value}"]
    result = helm.run(*argv, check=False)
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


EXEC_POLICY_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ValidatingAdmissionPolicy",
                     "ValidatingAdmissionPolicyBinding")  # fmt: skip
TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"  # the servers' in every container


def test_the_orchestrator_may_exec_only_a_baselines_iperf3_client_in_the_xrootd_pods(
    helm: Helm, cluster: Cluster, eventually: Callable[..., Any], tmp_path: Path
) -> None:
    """The chart's Role and admission policy on a real API server (no pod runs: an exec the
    policy lets through ends at "the pod is gone", one it refuses says so)."""
    namespace = f"tpcb-exec-{uuid.uuid4().hex[:6]}"
    rendered = helm.template("baseline-values.yaml", namespace=namespace)
    component = "app.kubernetes.io/component"
    objects = [o for o in rendered if o["kind"] in EXEC_POLICY_KINDS
               and o["metadata"]["labels"][component] == "orchestrator"]  # fmt: skip
    assert sorted(o["kind"] for o in objects) == sorted(EXEC_POLICY_KINDS)
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    created = []
    try:
        for item in objects:
            kind = cluster.dynamic().resources.get(
                api_version=item["apiVersion"], kind=item["kind"]
            )
            where = {"namespace": namespace} if kind.namespaced else {}
            kind.create(body=item, **where)
            created.append((kind, item["metadata"]["name"], where))
        account = "rel-tpc-bench-orchestrator"
        api = new_client_from_config(
            str(cluster.kubeconfig(tmp_path / "kubeconfig", namespace, account))
        )

        def said(pod: str, container: str, argv: list[str]) -> str:
            with pytest.raises(UserError) as refused:
                run_in_pod(f"{namespace}/{pod}", container, argv, 10, api_client=api)
            return str(refused.value)

        baseline = iperf3_client_argv("10.0.0.2", 5201, streams=88, seconds=10, omit=2)
        bound = iperf3_client_argv("10.0.0.2", 5201, streams=8, seconds=3, omit=1, bind="10.0.0.1")
        denied = "ValidatingAdmissionPolicy"
        # once the Role and the policy are in force: the signer's pod (the CA key) is refused
        eventually(lambda: said("rel-tpc-bench-signer-5d8f7", "iperf3", baseline),
                   lambda why: denied in why, "the admission policy in force")  # fmt: skip
        server = "rel-tpc-bench-xrootd-x7k2p"
        for argv in (baseline, bound):  # what baseline.py runs passes (to the missing pod)
            assert "is gone" in said(server, "iperf3", argv)
        for container, argv in [
            ("xrootd", baseline),  # another container of the pod
            ("iperf3", ["sh", "-c", f"cat {TOKEN}"]),
            ("iperf3", [*baseline, "--file", TOKEN]),
            ("iperf3", ["iperf3", "--server", "--port", "5202"]),
        ]:
            assert denied in said(server, container, argv), argv
    finally:
        for kind, name, where in reversed(created):
            kind.delete(name=name, **where)
        cluster.core.delete_namespace(namespace)

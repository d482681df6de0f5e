"""orchestrator/cluster/pod_exec.py: a command in a server pod through the API server, and
why an exec could not happen, said in one line. A real API server (kwok plays the node, so
no container runs: the command's own output and exit code are tested on real kubelets, in
tests/chart/test_chart_on_kubelets.py, where a link baseline runs iperf3 this way)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.config import new_client_from_config

from orchestrator.cluster.pod_exec import NOT_STARTED, exit_status, run_in_pod
from orchestrator.errors import UserError
from orchestrator.lab.kube.control_plane import write_kubeconfig
from tests.support.simcluster import SimCluster, fake_node

NAMESPACE = "tpc-bench-exec"
POD = f"{NAMESPACE}/server"


def status(**fields: Any) -> str:
    return json.dumps({"metadata": {}, **fields})


def test_the_exit_code_is_the_commands_or_says_why_it_did_not_run() -> None:
    assert exit_status(status(status="Success")) == (0, "")
    failed = status(status="Failure", reason="NonZeroExitCode",
                    details={"causes": [{"reason": "ExitCode", "message": "3"}]})  # fmt: skip
    assert exit_status(failed) == (3, "")
    missing = 'exec: "iperf3": executable file not found in $PATH: unknown'
    assert exit_status(status(status="Failure", reason="InternalError", message=missing)) == (
        NOT_STARTED, missing,
    )  # fmt: skip
    code, why = exit_status("")  # the connection ended before any status
    assert code == NOT_STARTED and "without an exit status" in why


def test_a_pod_is_named_namespace_slash_name() -> None:
    for wrong in ("server", "/server", "ns/", "ns/a/b"):
        with pytest.raises(UserError, match="namespace/name"):
            run_in_pod(wrong, "iperf3", ["true"], 5, api_client=client.ApiClient())


@pytest.fixture(scope="module")
def cluster(sim_cluster: SimCluster, eventually: Callable[..., Any]) -> Iterator[SimCluster]:
    """A running pod with an "iperf3" container, on a kwok node."""
    core = client.CoreV1Api(sim_cluster.api_client())
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    core.create_node(fake_node("exec-node", "10.88.7.1"))
    core.create_namespaced_pod(
        NAMESPACE,
        {
            "metadata": {"name": "server"},
            "spec": {"nodeName": "exec-node", "containers": [{"name": "iperf3", "image": "x"}]},
        },
    )
    phase = lambda: core.read_namespaced_pod("server", NAMESPACE).status.phase  # noqa: E731
    eventually(phase, "Running".__eq__, "the pod Running")
    yield sim_cluster
    core.delete_namespace(NAMESPACE)
    core.delete_node("exec-node")


def account(cluster: SimCluster, name: str, verbs: list[str], tmp_path: Path) -> client.ApiClient:
    """An ApiClient acting as a new ServiceAccount allowed `verbs` on pods/exec (none: no Role)."""
    admin = cluster.api_client()
    core, rbac = client.CoreV1Api(admin), client.RbacAuthorizationV1Api(admin)
    core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": name}})
    if verbs:
        rule = {"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs}
        rbac.create_namespaced_role(NAMESPACE, {"metadata": {"name": name}, "rules": [rule]})
        rbac.create_namespaced_role_binding(
            NAMESPACE,
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}],
            },
        )
    spec = client.V1TokenRequestSpec(audiences=[])
    request = client.AuthenticationV1TokenRequest(spec=spec)
    token = core.create_namespaced_service_account_token(name, NAMESPACE, request).status.token
    kubeconfig = tmp_path / f"{name}.kubeconfig"
    write_kubeconfig(kubeconfig, cluster.server, cluster.ca_file, token, name, NAMESPACE)
    return new_client_from_config(str(kubeconfig))


def refusal(api: client.ApiClient, pod: str = POD, container: str = "iperf3") -> str:
    with pytest.raises(UserError) as refused:
        run_in_pod(pod, container, ["iperf3", "--version"], 10, api_client=api)
    return str(refused.value)


def test_a_pod_gone_and_a_container_it_does_not_have_are_said(cluster: SimCluster) -> None:
    admin = cluster.api_client()
    gone = refusal(admin, f"{NAMESPACE}/replaced")
    assert gone == (
        f"pod {NAMESPACE}/replaced is gone (deleted or replaced since discovery): "
        'pods "replaced" not found'
    )
    assert refusal(admin, container="xrootd") == (
        f"cannot exec in container xrootd of pod {POD}: 400 container xrootd is not valid for "
        "pod server"
    )


def test_without_exec_rights_the_error_names_the_permission_and_the_value(
    cluster: SimCluster, eventually: Callable[..., Any], tmp_path: Path
) -> None:
    denied = refusal(account(cluster, "no-exec", [], tmp_path))
    assert denied.startswith(
        f"may not exec into pod {POD}: this ServiceAccount needs get and create on pods/exec in "
        f"namespace {NAMESPACE} (the chart grants them with baseline.enabled=true): "
    )
    assert 'cannot get resource "pods/exec"' in denied  # the API server's own words
    # the chart's rule (get, create): past the authorizer, to the pod (gone, here)
    allowed = account(cluster, "exec", ["get", "create"], tmp_path)
    eventually(
        lambda: refusal(allowed, f"{NAMESPACE}/replaced"),
        lambda said: "is gone" in said,
        "the Role in force",
    )


def test_an_api_server_that_does_not_answer_is_said() -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    configuration = client.Configuration(host=f"https://127.0.0.1:{port}")
    said = refusal(client.ApiClient(configuration))
    assert said.startswith(f"cannot reach the Kubernetes API at https://127.0.0.1:{port} to exec")

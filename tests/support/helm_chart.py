"""What the chart's tests share: helm, the chart rendered with its values scenarios, and the
simulated cluster side (nodes, volumes, ServiceAccount tokens bound to pods).

kwok plays the nodes: pods go Running and Ready but no container runs. Where a test needs
what a container would do (the certificate requests, the signer, discovery, a campaign), it
runs the same command as a process with the pod's own ServiceAccount token.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic

from orchestrator.lab.kube.control_plane import write_kubeconfig
from tests.support.simcluster import SimCluster, fake_node

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "tpc-bench"
HELM_BUILD = REPO / "scripts" / "helm" / "build.sh"
KUBE_VERSION = "1.31.4"  # the simulated cluster's
TEST_STORAGE_CLASS = "tpc-bench-test"  # the volumes the tests make for the release's claims
SCENARIOS = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))


@dataclass
class Helm:
    binary: Path
    kubeconfig: Path | None = None

    def run(
        self, *args: str, check: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HELM_CACHE_HOME": "/tmp/tpcbench-helm-cache"}
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        result = subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, env=env, timeout=timeout,
            check=False,
        )  # fmt: skip
        if check and result.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def template(self, *values: str, namespace: str = "tpc", **sets: str) -> list[dict[str, Any]]:
        """The rendered objects, for the given values files and --set pairs."""
        argv = ["template", "rel", str(CHART), "--namespace", namespace,
                "--kube-version", KUBE_VERSION]  # fmt: skip
        for name in values:
            argv += ["--values", str(CHART / "ci" / name)]
        for key, value in sets.items():
            argv += ["--set", f"{key}={value}"]
        return [doc for doc in yaml.safe_load_all(self.run(*argv).stdout) if doc]


def find(objects: list[dict[str, Any]], kind: str, suffix: str = "") -> dict[str, Any]:
    """The one rendered object of `kind` whose name ends with `suffix`."""
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, [(o["kind"], o["metadata"]["name"]) for o in found]
    return found[0]


# -- the simulated cluster side -----------------------------------------------------------------


@dataclass
class Cluster:
    sim: SimCluster
    api: client.ApiClient

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def dynamic(self) -> dynamic.DynamicClient:
        return dynamic.DynamicClient(self.api)

    def add_nodes(self, addresses: dict[str, str], labels: dict[str, str]) -> None:
        for name, address in addresses.items():
            self.core.create_node(fake_node(name, address, labels))

    def delete_nodes(self, names: list[str]) -> None:
        for name in names:
            self.core.delete_node(name)

    def add_volumes(self, prefix: str, count: int, size: str = "20Gi") -> None:
        """Static volumes the release's claims bind to (the test cluster has no provisioner)."""
        for i in range(count):
            self.core.create_persistent_volume(
                client.V1PersistentVolume(
                    metadata=client.V1ObjectMeta(name=f"{prefix}-{i}"),
                    spec=client.V1PersistentVolumeSpec(
                        capacity={"storage": size},
                        access_modes=["ReadWriteOnce"],
                        storage_class_name=TEST_STORAGE_CLASS,
                        host_path=client.V1HostPathVolumeSource(path=f"/nonexistent/{prefix}-{i}"),
                    ),
                )
            )

    def token(
        self, namespace: str, account: str, pod: client.V1Pod | None = None, seconds: int = 3600
    ) -> str:
        """A ServiceAccount token, bound to `pod` as the pod's own projected token would be."""
        bound = None
        if pod is not None:
            bound = client.V1BoundObjectReference(
                kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid, api_version="v1"
            )
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(
                audiences=[], expiration_seconds=seconds, bound_object_ref=bound
            )
        )
        answer = self.core.create_namespaced_service_account_token(account, namespace, request)
        return str(answer.status.token)

    def kubeconfig(
        self, path: Path, namespace: str, account: str, pod: client.V1Pod | None = None
    ) -> Path:
        """A kubeconfig acting as `account` (bound to `pod`), as a process in that pod would."""
        token = self.token(namespace, account, pod)
        write_kubeconfig(path, self.sim.server, self.sim.ca_file, token, account, namespace)
        return path

    def pods(self, namespace: str, component: str) -> list[client.V1Pod]:
        selector = f"app.kubernetes.io/component={component}"
        return list(self.core.list_namespaced_pod(namespace, label_selector=selector).items)


def release_values(**overrides: Any) -> list[str]:
    """--set arguments the installed releases share: small data, the test volumes."""
    values = {
        "orchestrator.persistence.storageClass": TEST_STORAGE_CLASS,
        "database.persistence.storageClass": TEST_STORAGE_CLASS,
        "campaign.fileSize": "16Mi",
        "campaign.transfers": "2",
        **overrides,
    }
    return [arg for key, value in values.items() for arg in ("--set", f"{key}={value}")]


# -- containers played as processes -------------------------------------------------------------


def tpcbench_argv(container: Any, substitutions: dict[str, str] | None = None) -> list[str]:
    """A container of the orchestrator image (entrypoint `tpcbench`) as a command line here,
    its $(VAR) references expanded as the kubelet would."""
    args = list(container.args or [])
    for name, value in (substitutions or {}).items():
        args = [a.replace(f"$({name})", value) for a in args]
    return [str(Path(sys.executable).with_name("tpcbench")), *args]

"""What the chart's tests on real kubelets share: one cluster lab (`lab up --kubernetes`, three
nodes, started once for test_chart_on_kubelets.py and test_chart_sites_on_kubelets.py by
tests/chart/conftest.py), ways to use and look into it as a user would (its `tpcbench`
command line, the webapp through its Service from a node, a run-now campaign and its
measurements, a server's certificate as another node sees it, a command in a pod), and what
its lab down must leave: nothing."""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from kubernetes import client
from kubernetes.stream import stream

from orchestrator.lab import stop_lab
from orchestrator.lab.kube import kernel_settings
from orchestrator.lab.kube.cluster_lab import api_client
from orchestrator.lab.kube.node_agents import cgroup_dirs
from orchestrator.lab.lifecycle import run_record_path
from orchestrator.lab.network import existing_namespaces
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import LabNetwork
from tests.support.polling import poll_until

REPO = Path(__file__).resolve().parents[2]
KUBENODE_BUILD = REPO / "scripts" / "kubenode" / "build.sh"
LAB_VALUES = REPO / "charts" / "tpc-bench" / "ci" / "lab-values.yaml"
TOKEN_VALUES = LAB_VALUES.with_name("tokens-values.yaml")
SERVER_COMPONENTS = ("xrootd", "gridftp")
# The cluster's nodes at 10.99.141-143.2, unless TPCBENCH_LAB_PREFIX /
# TPCBENCH_LAB_SUBNET_OFFSET say otherwise
CLUSTER_NETWORK = LabNetwork(
    prefix=os.environ.get("TPCBENCH_LAB_PREFIX", "tpckl"),
    subnet_offset=int(os.environ.get("TPCBENCH_LAB_SUBNET_OFFSET", "140")),
)
CLUSTER_NODES = ("lab-1", "lab-2", "lab-3")


@dataclass
class KubeletLab:
    home: Path
    network: LabNetwork
    namespace: str
    release: str

    @property
    def record(self) -> LabRun:
        return LabRun.load(run_record_path(self.home))

    @property
    def api(self) -> client.ApiClient:
        return api_client(self.record)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def fullname(self) -> str:
        return f"{self.release}-tpc-bench"

    @property
    def issuer_url(self) -> str:
        """The release's token issuer (charts/tpc-bench/templates/_tokens.tpl)."""
        return f"https://{self.fullname}-token-issuer.{self.namespace}.svc"

    def netns(self, node: str) -> str:
        return f"{self.network.prefix}-{node}"

    def address(self, node: str) -> str:
        index = int(node.removeprefix("lab-"))
        return f"10.99.{self.network.subnet_offset + index}.2"

    # -- pods --------------------------------------------------------------------------------

    def pods(self, component: str | None = None) -> list[client.V1Pod]:
        selector = f"app.kubernetes.io/instance={self.release}"
        if component:
            selector += f",app.kubernetes.io/component={component}"
        found = self.core.list_namespaced_pod(self.namespace, label_selector=selector).items
        return [p for p in found if p.metadata.deletion_timestamp is None]

    def server_pod(self, component: str, node: str) -> client.V1Pod | None:
        return next((p for p in self.pods(component) if p.spec.node_name == node), None)

    def exec(self, pod: client.V1Pod, container: str, argv: list[str]) -> str:
        """A command in a pod's container, through the API server and the node's kubelet."""
        return str(
            stream(
                self.core.connect_get_namespaced_pod_exec,
                pod.metadata.name,
                self.namespace,
                container=container,
                command=argv,
                stderr=True,
                stdin=False,
                stdout=True,
                tty=False,
            )
        )

    def tpcbench(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The `tpcbench` command line, on this lab."""
        env = {**os.environ, "TPCBENCH_HOME": str(self.home)}
        return subprocess.run(
            [str(Path(sys.executable).with_name("tpcbench")), *args],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip

    def node_ready(self, name: str) -> str:
        """The Node's Ready condition: "True", "False" or "Unknown"."""
        node = self.core.read_node(name)
        return str(next(c.status for c in node.status.conditions if c.type == "Ready"))

    def secret(self, suffix: str) -> dict[str, str]:
        read = self.core.read_namespaced_secret(f"{self.fullname}-{suffix}", self.namespace)
        return {k: base64.b64decode(v).decode() for k, v in (read.data or {}).items()}

    # -- from a node's network namespace ---------------------------------------------------

    def in_node(self, node: str, argv: list[str], timeout: float = 60) -> str:
        result = subprocess.run(
            ["ip", "netns", "exec", self.netns(node), *argv],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            pytest.fail(f"{shlex.join(argv)} in {node} failed: {result.stderr[-2000:]}")
        return result.stdout

    def webapp(self, node: str, method: str, path: str, body: Any = None) -> Any:
        """The webapp's API through its Service's cluster IP, by its Service name, from a
        node (kube-proxy there), with the release's API token."""
        service = self.core.read_namespaced_service(f"{self.fullname}-webapp", self.namespace)
        host = f"{self.fullname}-webapp.{self.namespace}.svc"
        token = self.secret("webapp")["api-token"]
        headers = [
            f"Host: {host}",
            f"Authorization: Token {token}",
            "Content-Type: application/json",
        ]
        argv = ["curl", "-sS", "--fail-with-body", "-X", method]
        for header in headers:
            argv += ["-H", header]
        if body is not None:
            argv += ["-d", json.dumps(body)]
        return json.loads(self.in_node(node, [*argv, f"http://{service.spec.cluster_ip}{path}"]))

    def run_campaign(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A campaign asked for through the webapp (run-now), run by the orchestrator pod: the
        campaign when it has ended, and its measurements with their transfers."""
        uuid = self.webapp("lab-1", "POST", "/api/v1/campaigns/", {})["uuid"]

        def finished() -> dict[str, Any] | None:
            found = self.webapp("lab-1", "GET", "/api/v1/campaigns/?limit=50")["results"]
            mine = next(c for c in found if c["uuid"] == uuid)
            return mine if mine["state"] in ("finished", "failed", "interrupted") else None

        campaign = wait_for(finished, f"campaign {uuid} finished", timeout=600)
        path = f"/api/v1/measurements/?campaign={uuid}&limit=200&expand=transfers"
        return campaign, self.webapp("lab-1", "GET", path)["results"]

    def stored_measurements(self, campaign: str) -> int:
        """How many measurements of the campaign the release's PostgreSQL holds."""
        query = (
            "SELECT count(*) FROM results_measurement m JOIN results_campaign c "
            f"ON m.campaign_id = c.id WHERE c.uuid = '{campaign}'"
        )
        psql = ["psql", "-U", "tpcbench", "-d", "tpcbench", "-tAc", query]
        return int(self.exec(self.pods("database")[0], "postgresql", psql).strip())

    def served_certificate(self, from_node: str, node: str, port: int = 8443) -> x509.Certificate:
        """The certificate `node`'s server presents, as `from_node` sees it over the lab."""
        code = "import ssl,sys;print(ssl.get_server_certificate((sys.argv[1],int(sys.argv[2]))))"
        pem = self.in_node(from_node, [sys.executable, "-c", code, self.address(node), str(port)])
        return x509.load_pem_x509_certificate(pem.encode())


def wait_for(probe: Callable[[], Any], what: str, timeout: float = 300.0) -> Any:
    """`probe`'s first true value; an exception (the API not answering yet) is "not yet"."""

    def attempt() -> Any:
        try:
            return probe()
        except Exception as exc:
            return exc

    return poll_until(
        attempt, lambda v: bool(v) and not isinstance(v, Exception), what, timeout=timeout
    )


def all_ready(pod: client.V1Pod) -> bool:
    statuses = pod.status.container_statuses or []
    return pod.status.phase == "Running" and bool(statuses) and all(s.ready for s in statuses)


def ca_of(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def take_down_and_check(
    home: Path, machine_settings: dict[str, str], namespaces_before: set[str]
) -> None:
    """`lab down` of the cluster lab at `home`, then nothing of it left: no process, network
    namespace (the nodes' and the pods' cni-*), container log link, work directory, cgroup,
    mount or containerd shim; the machine's kernel settings as they were before it."""
    record = LabRun.load(run_record_path(home))
    processes = [*record.cluster.control_plane, *record.cluster.agents]
    workdir = Path(record.cluster.workdir)
    prefix = record.network.prefix
    cgroups = [d for n in CLUSTER_NODES for d in cgroup_dirs(f"/tpcbench-{prefix}-{n}")]
    done = stop_lab(home)
    assert any("stopped kubelet on lab-3" in line for line in done)
    assert kernel_settings.read_settings() == machine_settings
    assert [p.pid for p in processes if Path(f"/proc/{p.pid}").exists()] == []
    # the nodes' and the pods' (cni-*) gone; other labs may come and go meanwhile
    left = existing_namespaces() - namespaces_before
    assert [n for n in left if n.startswith((f"{prefix}-", "cni-"))] == []
    logs = Path("/var/log/containers")
    links = [os.readlink(p) for p in logs.iterdir() if p.is_symlink()] if logs.is_dir() else []
    assert [link for link in links if link.startswith(str(workdir))] == []
    assert not workdir.exists()
    assert [d for d in cgroups if d.exists()] == []
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(home) not in mounts
    shims = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True)
    assert shims.stdout == ""

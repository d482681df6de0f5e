"""The chart end to end: real transfers between servers running from our images.

The simulated nodes' InternalIPs are the addresses of a podman lab's nodes, whose xrootd,
gridftp and RTT probe run from the debian images with the site's CA (the chart's
`certificates.ca.existingSecret`). The chart is installed; then what its pods would do runs
for real with their own ServiceAccounts: the signer (a process, the chart's arguments), the
orchestrator's client-certificate request, and a campaign from the orchestrator image with
the chart's settings and the pod's in-cluster credentials, reporting to the webapp image.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from chart_support import CHART, Cluster, Helm, release_values, tpcbench_argv
from kubernetes import client
from support.podman import run_podman
from support.webapp_container import WebappContainer

from ca.authority import CertificateAuthority
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from orchestrator.servers import layout

pytestmark = [pytest.mark.cluster, pytest.mark.lab]

NAMESPACE = "tpcb-e2e"
RELEASE = "e2e"
FULLNAME = f"{RELEASE}-tpc-bench"
NETWORK = LabNetwork(prefix="tpcbh", subnet_offset=180)  # 10.99.181-182.0/24
FILE_SIZE = 16 << 20
VALUES = {
    "nodes": {"selector": {"tpc-bench.io/network": None, "tpc-bench.io/e2e": "yes"}},
    "certificates": {"ca": {"existingSecret": "site-ca"}},
    "webapp": {"privateReads": True},  # the probes and the helm test must cope
}


def own(path: Path, mode: int) -> None:
    """Readable by the images' user, as a kubelet's fsGroup makes a pod's volumes."""
    os.chown(path, layout.SERVER_UID, layout.SERVER_GID)
    path.chmod(mode)


def write_files(folder: Path, files: dict[str, str | bytes], mode: int = 0o644) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    own(folder, 0o755)
    for name, content in files.items():
        path = folder / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        own(path, mode)
    return folder


class Stack:
    def __init__(self, cluster: Cluster, helm: Helm, workdir: Path) -> None:
        self.cluster, self.helm, self.workdir = cluster, helm, workdir
        self.lab_home = Path(tempfile.mkdtemp(prefix="tpcbench-chart-e2e-"))
        self.lab: LabInventory | None = None
        self.signer: subprocess.Popen[bytes] | None = None

    def pod(self, component: str) -> client.V1Pod:
        pods = self.cluster.pods(NAMESPACE, component)
        assert len(pods) >= 1
        return pods[0]

    def secret(self, suffix: str) -> dict[str, str]:
        read = self.cluster.core.read_namespaced_secret(f"{FULLNAME}-{suffix}", NAMESPACE)
        return {k: base64.b64decode(v).decode() for k, v in (read.data or {}).items()}

    def deployment(self, part: str) -> client.V1Deployment:
        apps = client.AppsV1Api(self.cluster.api)
        return apps.read_namespaced_deployment(f"{FULLNAME}-{part}", NAMESPACE)

    def up(self) -> None:
        os.chmod(self.lab_home, 0o755)
        ca = CertificateAuthority.init(self.lab_home / "ca")
        self.lab = start_lab(self.lab_home, 2, FILE_SIZE, network=NETWORK, runtime="podman")
        self.cluster.add_nodes(
            {n.name: n.address for n in self.lab.nodes}, {"tpc-bench.io/e2e": "yes"}
        )
        self.cluster.add_volumes("e2e-pv", 2)
        self.cluster.core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        self.cluster.core.create_namespaced_secret(
            NAMESPACE,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="site-ca"),
                type="kubernetes.io/tls",
                string_data={
                    "tls.crt": ca.cert_path.read_text(),
                    "tls.key": ca.key_path.read_text(),
                },
            ),
        )
        values = self.workdir / "values.yaml"
        values.write_text(yaml.safe_dump(VALUES))
        self.helm.run(
            "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--wait", "--timeout", "5m",
            "--values", str(values), *release_values(),
        )  # fmt: skip

    def start_signer(self) -> dict[str, str]:
        """The signer with the chart's arguments and account; returns the certdir it publishes."""
        container = self.deployment("signer").spec.template.spec.containers[0]
        kubeconfig = self.cluster.kubeconfig(
            self.workdir / "signer.kubeconfig", NAMESPACE, f"{FULLNAME}-signer", self.pod("signer")
        )
        argv = [*tpcbench_argv(container), f"--kubeconfig={kubeconfig}", "--metrics-port=0"]
        self.signer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.signer.poll() is None, self.signer.stderr.read().decode()  # type: ignore[union-attr]
            read = self.cluster.core.read_namespaced_config_map(
                f"{FULLNAME}-grid-security", NAMESPACE
            )
            if read.data:
                return dict(read.data)
            time.sleep(0.3)
        pytest.fail("the signer published no grid-security directory within 60 s")

    def down(self) -> None:
        if self.signer is not None and self.signer.poll() is None:
            self.signer.send_signal(signal.SIGTERM)
            self.signer.wait(timeout=30)
        self.helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", check=False)
        core = self.cluster.core
        for claim in core.list_namespaced_persistent_volume_claim(NAMESPACE).items:
            core.delete_namespaced_persistent_volume_claim(claim.metadata.name, NAMESPACE)
        core.delete_namespace(NAMESPACE)
        for name in ("lab-1", "lab-2"):
            core.delete_node(name)
        for i in range(2):
            core.delete_persistent_volume(f"e2e-pv-{i}")
        stop_lab(self.lab_home)
        shutil.rmtree(self.lab_home, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(
    images: dict[str, str],
    cluster: Cluster,
    cluster_helm: Helm,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    built = Stack(cluster, cluster_helm, tmp_path_factory.mktemp("e2e"))
    try:
        built.up()
        yield built
    finally:
        built.down()


def pod_service_account(stack: Stack, account: str, pod: client.V1Pod, where: Path) -> Path:
    """What the kubelet projects into a pod: its bound token, the cluster CA, its namespace."""
    token = stack.cluster.token(NAMESPACE, account, pod)
    files = {
        "token": token,
        "ca.crt": stack.cluster.sim.ca_file.read_bytes(),
        "namespace": NAMESPACE,
    }
    return write_files(where, files, mode=0o644)


def test_a_campaign_with_the_charts_settings_measures_the_lab_and_lands_in_the_webapp(
    stack: Stack, images: dict[str, str]
) -> None:
    certdir = write_files(stack.workdir / "certificates", stack.start_signer())
    # the orchestrator pod's init container: its client certificate, from the signer
    orchestrator_pod = stack.pod("orchestrator")
    init = orchestrator_pod.spec.init_containers[0]
    credentials = stack.workdir / "client"
    kubeconfig = stack.cluster.kubeconfig(
        stack.workdir / "orchestrator.kubeconfig",
        NAMESPACE,
        f"{FULLNAME}-orchestrator",
        orchestrator_pod,
    )
    argv = [
        a if not a.startswith("--out-dir=") else f"--out-dir={credentials}"
        for a in tpcbench_argv(init)
    ]
    done = subprocess.run(
        [*argv, f"--kubeconfig={kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    own(credentials, 0o755)
    own(credentials / "usercert.pem", 0o644)
    own(credentials / "userkey.pem", 0o600)

    token = stack.secret("webapp")["api-token"]
    auth = {"Authorization": f"Token {token}"}
    webapp_pod = stack.pod("webapp")
    webapp_container = webapp_pod.spec.containers[0]
    with WebappContainer(images["webapp"]) as webapp:
        # the chart's environment (hosts, private reads), the database and port of this test
        webapp.env |= {e.name: e.value for e in webapp_container.env if e.value is not None}
        webapp.env["TPCBENCH_API_TOKEN"] = token
        webapp.manage("migrate_locked")  # the webapp pod's init containers, in order
        webapp.manage("ensure_api_token", "orchestrator")
        webapp.serve()
        # the readiness probe as a kubelet sends it: to the pod's IP, by that name
        probe = webapp_container.readiness_probe.http_get
        ready = httpx.get(
            webapp.url + probe.path,
            headers={"Host": f"{webapp_pod.status.pod_ip}:{webapp.port}"},
            timeout=10,
        )
        assert ready.status_code == 200, ready.text
        assert httpx.get(webapp.url + "/api/v1/nodes/", timeout=10).status_code == 401

        # the orchestrator container, with the chart's environment and the pod's credentials
        container = orchestrator_pod.spec.containers[0]
        env = {e.name: e.value for e in container.env if e.value is not None}
        env["TPCBENCH_REPORT_TO"] = webapp.url  # the Service's address, here on this host
        account = pod_service_account(
            stack, f"{FULLNAME}-orchestrator", orchestrator_pod, stack.workdir / "serviceaccount"
        )
        state = write_files(stack.workdir / "state", {})
        token_dir = write_files(stack.workdir / "api-token", {"api-token": token}, mode=0o400)
        token_file = token_dir / "api-token"
        api_host, api_port = stack.cluster.sim.server.removeprefix("https://").split(":")
        env |= {"KUBERNETES_SERVICE_HOST": api_host, "KUBERNETES_SERVICE_PORT": api_port}
        result = run_podman(
            "run", "--rm", "--network", "host", "--read-only", "--cap-drop", "all",
            *[f"--env={k}={v}" for k, v in env.items()],
            "--volume", f"{state}:/var/lib/tpc-bench",
            "--volume", f"{credentials}:{layout.HOST_CREDENTIALS}:ro",
            "--volume", f"{certdir}:{layout.CERTDIR}:ro",
            "--volume", f"{token_file}:/var/run/tpc-bench/api-token:ro",
            "--volume", f"{account}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
            images["orchestrator"], "campaign", "run",
            timeout=900,
        )  # fmt: skip
        listed = httpx.get(webapp.url + "/api/v1/measurements/?limit=100", headers=auth, timeout=10)
        rows = listed.json()["results"]
        # 2 ordered pairs x (https, gridftp) x (8, 1) streams, K = 2 each (the chart's values)
        assert len(rows) == 8, result.stdout[-3000:] + result.stderr[-3000:]
        assert {(r["src"], r["dst"]) for r in rows} == {("lab-1", "lab-2"), ("lab-2", "lab-1")}
        assert {(r["protocol"], r["streams"]) for r in rows} == {
            ("https", 8),
            ("https", 1),
            ("gridftp", 8),
            ("gridftp", 1),
        }
        failures = [
            (r["src"], r["dst"], r["protocol"], r["transfers"]) for r in rows if r["failed"]
        ]
        assert failures == []
        assert all(r["succeeded"] == 2 and r["file_size"] == FILE_SIZE for r in rows)
        assert all(r["rtt_ms"] is not None for r in rows)  # asked from the probe containers

        # the helm test hook that checks the webapp, run in its image against this webapp
        hooks = yaml.safe_load_all(stack.helm.run("get", "hooks", RELEASE, "-n", NAMESPACE).stdout)
        webapp_hook = next(
            h
            for h in hooks
            if h and h["spec"]["containers"][0].get("command", [None])[0] == "python3"
        )
        command = webapp_hook["spec"]["containers"][0]["command"]
        service_url = f"http://{FULLNAME}-webapp.{NAMESPACE}.svc:80"
        command = [c.replace(service_url, webapp.url) for c in command]
        checked = run_podman(
            "run", "--rm", "--network", "host", f"--env=TPCBENCH_API_TOKEN={token}",
            images["webapp"], *command,
        )  # fmt: skip
        assert "/healthz: 200 ok" in checked.stdout
        assert "2 node(s) known" in checked.stdout

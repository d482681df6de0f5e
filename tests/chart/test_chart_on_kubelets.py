"""The chart's pods, run for real: `helm install` on a cluster lab of three real kubelets.

`tpcbench lab up --kubernetes` starts the control plane here and containerd, a kubelet and
kube-proxy in each lab node's namespace behind an emulated WAN; the chart goes on with
charts/tpc-bench/ci/lab-values.yaml and ci/tokens-values.yaml (every https measurement with
the client certificate and with tokens). Then what a site engineer does, in order: install,
look at the certificates, helm test, ask for a campaign through the webapp, look into the
token area, upgrade, lose a server pod, lose a node's kubelet, uninstall, and take the lab
down. The tests share one cluster and run in this file's order; each says what it leaves for
the next. With ci/baseline-values.yaml each campaign measures each pair's link first, with
iperf3 from the source's XRootD pod to the destination's, as `tpcbench baseline` does there.
The cluster (tests/chart/conftest.py) is also test_chart_sites_on_kubelets.py's, whose tests
run after these: when both files run, the lab down is the last test of that file.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.x509 import IPAddress, SubjectAlternativeName
from kubernetes import client

from ca.authority import CertificateAuthority
from ca.keys import write_private
from ca.tokens import TokenMinter, ensure_issuer_key
from orchestrator.cluster.pod_exec import run_in_pod
from orchestrator.endpoints import in_token_area, source_name
from orchestrator.errors import UserError
from orchestrator.lab.cluster_lifecycle import start_cluster_lab
from orchestrator.lab.kube import kernel_settings
from orchestrator.lab.topology import LabNetwork
from tests.support.helm_chart import CHART, Helm
from tests.support.kubelet_lab import (
    CLUSTER_NETWORK,
    LAB_VALUES,
    SERVER_COMPONENTS,
    TOKEN_VALUES,
    KubeletLab,
    all_ready,
    ca_of,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.lab]

NETWORK = CLUSTER_NETWORK  # 10.99.141-143.2 unless TPCBENCH_LAB_PREFIX / _SUBNET_OFFSET say
NAMESPACE = "tpc"
RELEASE = "lab"
SERVER_NODES = ["lab-1", "lab-2"]  # lab-3 starts unlabelled: no server pods there
BASELINE_VALUES = LAB_VALUES.with_name("baseline-values.yaml")


# kubelet_cluster (three nodes, 10 ms, 4 Gbit/s) and machine_settings: conftest.py
@pytest.fixture(scope="module")
def lab(kubelet_cluster: Path) -> KubeletLab:
    return KubeletLab(kubelet_cluster, NETWORK, NAMESPACE, RELEASE)


@pytest.fixture(scope="module")
def helm(helm_binary: Path, lab: KubeletLab) -> Helm:
    return Helm(helm_binary, Path(lab.record.cluster.workdir) / "control-plane" / "kubeconfig")


# -- the cluster lab ---------------------------------------------------------------------------


def test_lab_up_kubernetes_gives_ready_nodes_status_and_a_kubeconfig(lab: KubeletLab) -> None:
    status = lab.tpcbench("lab", "status", "--json")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["runtime"] == "kubernetes"
    assert [n["name"] for n in shown["nodes"]] == ["lab-1", "lab-2", "lab-3"]
    for node in shown["nodes"]:
        assert node["state"] == "Ready", node
        assert node["address"] == lab.address(node["name"])
        assert {node[a] for a in ("containerd", "kubelet", "kube-proxy")} == {"ok"}
    kubeconfig = lab.tpcbench("lab", "kubeconfig").stdout.strip()
    assert Path(kubeconfig).is_file() and yaml.safe_load(Path(kubeconfig).read_text())
    # each Node is its lab address, and every node runs cluster DNS's Service rules
    nodes = {n.metadata.name: n for n in lab.core.list_node().items}
    for name, node in nodes.items():
        internal = [a.address for a in node.status.addresses if a.type == "InternalIP"]
        assert internal == [lab.address(name)]
        assert node.metadata.labels["tpc-bench/link-gbps"] == "4"  # discovery reads it


def test_kubelets_changed_the_machines_kernel_settings_and_the_lab_holds_them(
    lab: KubeletLab, machine_settings: dict[str, str]
) -> None:
    # kubelet's own values (setupKernelTunables): the lab must put the machine's back
    now = kernel_settings.read_settings()
    assert now["kernel.panic"] == "10" and now["kernel.panic_on_oops"] == "1"
    assert now["vm.overcommit_memory"] == "1"
    assert str(lab.record.path) in kernel_settings.holders()


def test_a_second_cluster_lab_on_the_same_names_is_refused(lab: KubeletLab, tmp_path: Path) -> None:
    with pytest.raises(
        UserError, match=rf"network namespace {NETWORK.prefix}-lab-1 already exists"
    ):
        start_cluster_lab(tmp_path, 3, network=NETWORK)
    with pytest.raises(UserError, match=r"a lab is already running .*kubernetes runtime"):
        start_cluster_lab(lab.home, 3, network=LabNetwork(prefix="tpckx", subnet_offset=200))
    assert not (tmp_path / "lab" / "run.json").exists()  # nothing was started


# -- the chart on it ---------------------------------------------------------------------------


def test_helm_install_runs_every_pod_ready_and_servers_only_on_labelled_nodes(
    lab: KubeletLab, helm: Helm
) -> None:
    # lab-3 unlabelled (no servers) and cordoned: nothing of the release but the DaemonSets'
    # pods ever goes there, so stopping its kubelet later takes only its servers away
    lab.core.patch_node(
        "lab-3",
        {"metadata": {"labels": {"tpc-bench.io/network": None}}, "spec": {"unschedulable": True}},
    )
    install = ["install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace"]
    values = ["--values", str(LAB_VALUES), "--values", str(TOKEN_VALUES),
              "--values", str(BASELINE_VALUES), "--set", "baseline.seconds=3",
              "--set", "baseline.omit=1", "--set", "webapp.privateReads=true"]  # fmt: skip
    helm.run(*install, *values, "--wait", "--timeout", "10m", timeout=900)

    # helm's --wait saw each pod Ready once; a busy machine can fail an exec probe after that
    def every_pod_ready() -> list[client.V1Pod]:
        found = lab.pods()
        return found if found and all(map(all_ready, found)) else []

    pods = wait_for(every_pod_ready, "every pod of the release Running and Ready")
    for component in SERVER_COMPONENTS:
        assert sorted(p.spec.node_name for p in lab.pods(component)) == SERVER_NODES
    components = {p.metadata.labels["app.kubernetes.io/component"] for p in pods}
    assert components == {
        "xrootd", "gridftp", "signer", "orchestrator", "webapp", "database", "token-issuer",
    }  # fmt: skip


def test_each_server_certificate_came_from_the_signer_for_its_own_node(lab: KubeletLab) -> None:
    ca = ca_of(lab.secret("ca")["tls.crt"])
    for node, other in (("lab-1", "lab-2"), ("lab-2", "lab-1")):
        served = lab.served_certificate(other, node)
        assert served.subject.rfc4514_string().startswith(f"CN={node},")
        names = served.extensions.get_extension_for_class(SubjectAlternativeName).value
        assert lab.address(node) in [str(ip) for ip in names.get_values_for_type(IPAddress)]
        assert served.issuer == ca.subject
        ca.public_key().verify(  # signed by the release's CA, made by the signer
            served.signature,
            served.tbs_certificate_bytes,
            padding.PKCS1v15(),
            served.signature_hash_algorithm,
        )
    requests = client.CertificatesV1Api(lab.api).list_certificate_signing_request().items
    signed = [r for r in requests if r.spec.signer_name.endswith("-host") and r.status.certificate]
    assert len(signed) >= 2 * len(SERVER_NODES)  # an xrootd and a gridftp pod per node


def test_helm_test_passes_and_private_reads_are_private(lab: KubeletLab, helm: Helm) -> None:
    # webapp.privateReads: the kubelet's probes (by pod IP) and the test pods must cope
    result = helm.run("test", RELEASE, "--namespace", NAMESPACE, "--timeout", "5m", timeout=400)
    assert result.stdout.count("Phase:          Succeeded") == 2, result.stdout
    service = lab.core.read_namespaced_service(f"{lab.fullname}-webapp", NAMESPACE)
    host = f"Host: {lab.fullname}-webapp.{NAMESPACE}.svc"
    url = f"http://{service.spec.cluster_ip}/api/v1/nodes/"
    code = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", host, url]
    assert lab.in_node("lab-1", code) == "401"


def test_a_run_now_campaign_runs_in_the_orchestrator_pod_and_lands_in_postgresql(
    lab: KubeletLab,
) -> None:
    campaign, rows = lab.run_campaign()
    # 2 ordered pairs x (https with x509 and token, gridftp with x509) x (8, 1) streams, K = 4
    # of 32 MiB (lab values); tokens only for https (native root:// and gridftp take x509 only)
    assert (campaign["state"], campaign["measurements"]) == ("finished", 12)
    assert {(r["src"], r["dst"]) for r in rows} == {("lab-1", "lab-2"), ("lab-2", "lab-1")}
    assert sorted({(r["protocol"], r["auth"]) for r in rows}) == [
        ("gridftp", "x509"), ("https", "token"), ("https", "x509"),
    ]  # fmt: skip
    failures = [(r["src"], r["dst"], r["protocol"], r["transfers"]) for r in rows if r["failed"]]
    assert failures == []
    assert all(r["succeeded"] == 4 and r["file_size"] == 32 << 20 for r in rows)
    assert all(r["rtt_ms"] >= 9.0 for r in rows)  # the emulated WAN's 10 ms, from the probe
    nodes = lab.webapp("lab-1", "GET", "/api/v1/nodes/")["results"]
    assert {(n["name"], n["link_gbps"]) for n in nodes} == {("lab-1", 4.0), ("lab-2", 4.0)}
    assert lab.stored_measurements(campaign["uuid"]) == 12
    # each pair's link first: K x 8 streams, 3 s after 1 s, iperf3 in the source's pod
    path = f"/api/v1/baselines/?campaign={campaign['uuid']}"
    links = lab.webapp("lab-1", "GET", path)["results"]
    assert sorted((b["src"], b["dst"], b["error"]) for b in links) == [
        ("lab-1", "lab-2", ""), ("lab-2", "lab-1", ""),
    ]  # fmt: skip
    assert all((b["streams"], b["duration_s"], b["omit_s"]) == (32, 3, 1) for b in links)
    assert all(b["throughput_gbps"] > 0 and b["retransmits"] >= 0 for b in links)


def test_tpcbench_baseline_in_the_orchestrator_pod_measures_the_link_and_reports_it(
    lab: KubeletLab,
) -> None:
    pod = f"{NAMESPACE}/{lab.pods('orchestrator')[0].metadata.name}"
    argv = ["tpcbench", "baseline", "--src", "lab-2", "--dst", "lab-1", "--streams", "8",
            "--seconds", "3", "--omit", "1", "--json"]  # fmt: skip
    code, out, err = run_in_pod(pod, "orchestrator", argv, 120, api_client=lab.api)
    measured = json.loads(out) if code == 0 else pytest.fail(f"exit {code}: {err}")
    assert (measured["dst"], measured["streams"], measured["error"]) == ("lab-1", 8, "")
    stored = lab.webapp("lab-1", "GET", "/api/v1/baselines/?src=lab-2&dst=lab-1")["results"]
    mine = [b["throughput_gbps"] for b in stored if b["uuid"] == measured["uuid"]]
    assert mine == [measured["throughput_gbps"]] and mine[0] > 0  # sent before it exited


def test_the_token_area_opens_to_the_issuers_tokens_only(lab: KubeletLab, tmp_path: Path) -> None:
    """From another node, over our CA: a read of the token area's source with a token the
    release's issuer signed succeeds (xrootd fetched the issuer's keys through its Service,
    trusting our CA); no token, or a token signed by another key, is refused, as is a write."""
    ca = tmp_path / "ca.crt"
    ca.write_text(lab.secret("ca")["tls.crt"])
    server = f"https://{lab.address('lab-2')}:8443"
    source = in_token_area(source_name(32 << 20))
    url = lab.issuer_url
    release_key = tmp_path / "release" / "issuer-key.pem"
    write_private(release_key, lab.secret("token-key")["issuer-key.pem"].encode())
    other_key = ensure_issuer_key(tmp_path / "other")

    def status(*curl: str, key: Path | None = None) -> str:
        argv = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", str(ca)]
        if key is not None:
            token = TokenMinter.for_key(url, key).mint([f"storage.read:{source}"], audience=server)
            argv += ["-H", f"Authorization: Bearer {token}"]
        return lab.in_node("lab-1", [*argv, *curl])

    assert status("-r", "0-1023", server + source, key=release_key) == "206"
    assert status("-r", "0-1023", server + source) in ("401", "403")
    assert status("-r", "0-1023", server + source, key=other_key) in ("401", "403")
    written = f"{server}{in_token_area('/anonymous')}"
    assert status("-X", "PUT", "--data-binary", "x", written) in ("401", "403")


def test_upgrade_rolls_the_orchestrator_and_keeps_the_ca_token_and_password(
    lab: KubeletLab, helm: Helm, tmp_path: Path
) -> None:
    kept = {name: lab.secret(name) for name in ("ca", "webapp", "database", "token-key")}
    before = lab.pods("orchestrator")[0].metadata.uid
    # The orchestrator's client certificate from a Secret of the site's (signed by the
    # release's CA): GridFTP must accept its key, which the chart copies to a 0600 file.
    ca_dir = tmp_path / "release-ca"
    (ca_dir / "ca").mkdir(parents=True)
    (ca_dir / "ca" / "ca-cert.pem").write_text(kept["ca"]["tls.crt"])
    (ca_dir / "ca" / "ca-key.pem").write_text(kept["ca"]["tls.key"])
    client_cert = CertificateAuthority.load(ca_dir).issue_client("orchestrator")
    lab.core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="site-client"),
            type="kubernetes.io/tls",
            string_data={
                "tls.crt": client_cert.cert.read_text(),
                "tls.key": client_cert.key.read_text(),
            },
        ),
    )
    # docs/install.md's alerts: a chat webhook's URL kept in a Secret, a mailing list
    hook = "https://chat.example.org/hooks/tpc"
    lab.core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="chat-webhook"), string_data={"url": hook}
        ),
    )
    helm.run(
        "upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE, "--reuse-values",
        "--set", "campaign.streams={1}", "--set", "certificates.clientSource=secret",
        "--set", "orchestrator.clientCertificateSecret=site-client",
        "--set", "webapp.alerts.webhookSecret=chat-webhook",
        "--set", "webapp.alerts.mailTo={noc@example.org}",
        "--set", "webapp.alerts.smtpHost=smtp-relay.example.org",
        "--wait", "--timeout", "10m", timeout=900,
    )  # fmt: skip
    webapp = wait_for(lambda: [p for p in lab.pods("webapp") if all_ready(p)], "the webapp")[0]
    said = lab.exec(
        webapp, "webapp",
        ["python3", "manage.py", "shell", "-c", "from django.conf import settings as s; "
         "print(s.TPCBENCH_ALERT_WEBHOOK_URL, s.TPCBENCH_ALERT_MAIL_TO, s.EMAIL_HOST)"],
    )  # fmt: skip
    # the last line: Django's shell first says what it imported
    assert said.strip().splitlines()[-1].split() == [
        hook, "['noc@example.org']", "smtp-relay.example.org",
    ]  # fmt: skip
    # the upgrade step from a version without alerts: evaluates the stored history once
    evaluated = lab.exec(webapp, "webapp", ["python3", "manage.py", "evaluate_alerts"])
    assert re.search(r"read \d+ measurements", evaluated), evaluated
    orchestrator = wait_for(
        lambda: [p for p in lab.pods("orchestrator") if all_ready(p)], "the new orchestrator"
    )
    assert [p.metadata.uid for p in orchestrator] != [before]
    assert {name: lab.secret(name) for name in kept} == kept
    key = lab.exec(
        orchestrator[0],
        "orchestrator",
        ["stat", "-c", "%u %a", "/etc/grid-security/tpc-bench/userkey.pem"],
    )
    assert key.split() == ["10001", "600"]


def test_a_deleted_server_pod_comes_back_with_a_new_certificate(lab: KubeletLab) -> None:
    first = lab.served_certificate("lab-2", "lab-1")
    old = lab.server_pod("xrootd", "lab-1")
    assert old is not None
    lab.core.delete_namespaced_pod(old.metadata.name, NAMESPACE)
    wait_for(
        lambda: (
            (p := lab.server_pod("xrootd", "lab-1")) is not None
            and p.metadata.uid != old.metadata.uid
            and all_ready(p)
        ),
        "a new Ready xrootd pod on lab-1",
    )
    second = lab.served_certificate("lab-2", "lab-1")
    assert second.subject == first.subject and second.serial_number != first.serial_number
    assert second.not_valid_before_utc >= first.not_valid_before_utc


def test_a_stopped_kubelet_fails_that_nodes_measurements_with_a_reason(lab: KubeletLab) -> None:
    # lab-3 gets the label: the DaemonSets follow, then its kubelet stops answering
    lab.core.patch_node("lab-3", {"metadata": {"labels": {"tpc-bench.io/network": "100000"}}})
    for component in SERVER_COMPONENTS:
        wait_for(
            lambda c=component: (p := lab.server_pod(c, "lab-3")) is not None and all_ready(p),
            f"a Ready {component} pod on lab-3",
        )
    kubelet = next(
        a for a in lab.record.cluster.agents if a.node == "lab-3" and a.service == "kubelet"
    )
    os.kill(kubelet.pid, signal.SIGSTOP)  # stopped: it posts no status and runs no probe
    try:
        wait_for(lambda: lab.node_ready("lab-3") != "True", "lab-3 NotReady", timeout=120)
        campaign, rows = lab.run_campaign()
    finally:
        os.kill(kubelet.pid, signal.SIGCONT)
    # 6 ordered pairs x (https x509, https token, gridftp) x 1 stream: lab-3's 12 failed
    assert (campaign["state"], campaign["measurements"]) == ("finished", 18)
    failed = [r for r in rows if r["failed"]]
    assert sorted({(r["src"], r["dst"]) for r in failed}) == sorted(
        {
            (a, b)
            for a in ("lab-1", "lab-2", "lab-3")
            for b in ("lab-1", "lab-2", "lab-3")
            if a != b and "lab-3" in (a, b)
        }
    )
    assert all("node lab-3 is NotReady" in r["transfers"][0]["message"] for r in failed)
    ok = [r for r in rows if not r["failed"]]
    assert sorted((r["src"], r["dst"], r["protocol"], r["auth"]) for r in ok) == [
        ("lab-1", "lab-2", "gridftp", "x509"),
        ("lab-1", "lab-2", "https", "token"),
        ("lab-1", "lab-2", "https", "x509"),
        ("lab-2", "lab-1", "gridftp", "x509"),
        ("lab-2", "lab-1", "https", "token"),
        ("lab-2", "lab-1", "https", "x509"),
    ]  # gridftp too: with the client key from the Secret
    wait_for(lambda: lab.node_ready("lab-3") == "True", "lab-3 Ready again", timeout=120)


def test_uninstall_leaves_only_what_the_user_asked_to_keep(lab: KubeletLab, helm: Helm) -> None:
    helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", "--timeout", "5m")
    wait_for(lambda: lab.pods() == [], "no pods of the release")
    claims = lab.core.list_namespaced_persistent_volume_claim(NAMESPACE).items
    assert sorted(c.metadata.name for c in claims) == [
        f"data-{lab.fullname}-postgresql-0",
        f"{lab.fullname}-spool",
    ]  # persistence.keepOnUninstall: true, the default
    secrets = {s.metadata.name for s in lab.core.list_namespaced_secret(NAMESPACE).items}
    assert secrets == {f"{lab.fullname}-database", "site-client", "chat-webhook"}  # ours kept
    for kind in ("deployment", "daemon_set", "stateful_set"):
        listed = getattr(client.AppsV1Api(lab.api), f"list_namespaced_{kind}")(NAMESPACE)
        assert listed.items == []


def test_lab_down_removes_everything_and_puts_the_kernel_settings_back(
    kubelet_cluster_down: Callable[[], None],
) -> None:
    """No process, namespace, log link, directory, cgroup, mount or shim of the lab left, the
    kernel settings back (tests/support/kubelet_lab.py, take_down_and_check). Deselected when
    test_chart_sites_on_kubelets.py runs too: its own lab-down test, the same, ends the cluster."""
    kubelet_cluster_down()

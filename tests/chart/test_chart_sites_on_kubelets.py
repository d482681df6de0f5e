"""The chart's sites on real kubelets: two nodes of a cluster lab (`lab up --kubernetes`)
labelled into site "a", the third unlabelled and cordoned (nothing of the release there), the
chart installed with ci/lab-values.yaml and ci/sites-values.yaml.
The site's redirector pod runs (xrootd + cmsd, host network, port 1095) beside the nodes'
data servers (xrootd + cmsd, 1094); discovery reports the redirector apart from the hosts; a
GET of the source file through the redirector is redirected to a data server of the site and
returns that server's bytes, and so does a root:// read; HTTPS and root:// third-party copies
from a node to the redirector land on a data server of the site. The release uses a CA of the test's
own (certificates.ca.existingSecret), so the test holds a client certificate the servers map,
as the orchestrator's. The cluster lab is test_chart_on_kubelets.py's (tests/chart/conftest.py:
one start and stop for both files), used after that file's release is uninstalled: this
release goes into a namespace of its own, beside what that one kept in its namespace, and this
file's lab-down test ends the cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from ca.authority import CertificateAuthority
from orchestrator.discovery.kubernetes import KubernetesDiscovery
from orchestrator.endpoints import ClientCredentials, source_name
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from tests.support.helm_chart import CHART, Helm
from tests.support.kubelet_lab import (
    CLUSTER_NETWORK,
    LAB_VALUES,
    KubeletLab,
    all_ready,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.lab]

NAMESPACE = "tpc-sites"  # test_chart_on_kubelets.py's "tpc" keeps its claims and a Secret
RELEASE = "lab"
NODES = ["lab-1", "lab-2"]
OUTSIDE = "lab-3"  # the cluster's third node: no servers, no pods of the release
NETWORK_LABEL = "tpc-bench.io/network"  # nodes.selector's default: the benchmarked nodes
SITE = "a"
SITE_LABEL = "tpc-bench.io/site"  # sites.label's default
SITES_VALUES = LAB_VALUES.with_name("sites-values.yaml")
CA_SECRET = "site-ca"
CA_SUBJECT = "/DC=org/DC=tpc-bench/CN=sites test CA"
FILE_SIZE = 32 << 20  # ci/lab-values.yaml's campaign.fileSize


# kubelet_cluster (three nodes), machine_settings: conftest.py
@pytest.fixture(scope="module")
def lab(kubelet_cluster: Path) -> KubeletLab:
    return KubeletLab(kubelet_cluster, CLUSTER_NETWORK, NAMESPACE, RELEASE)


@pytest.fixture(scope="module")
def site_ca(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority.init(tmp_path_factory.mktemp("sites-ca"), subject=CA_SUBJECT)


@pytest.fixture(scope="module")
def helm(helm_binary: Path, lab: KubeletLab) -> Helm:
    return Helm(helm_binary, Path(lab.record.cluster.workdir) / "control-plane" / "kubeconfig")


def site_pods(lab: KubeletLab) -> list[client.V1Pod]:
    return [*lab.pods("redirector"), *lab.pods("xrootd"), *lab.pods("gridftp")]


def pod_states(lab: KubeletLab) -> list[str]:
    """Each pod of the release: name, node, phase, its containers' readiness, why Pending."""
    states = []
    for pod in lab.pods():
        ready = [f"{c.name}={c.ready}" for c in pod.status.container_statuses or []]
        why = [c.message for c in pod.status.conditions or [] if c.message]
        states.append(f"{pod.metadata.name}@{pod.spec.node_name}: {pod.status.phase} {ready} {why}")
    return states


def test_install_runs_the_sites_redirector_and_its_data_servers(
    lab: KubeletLab, helm: Helm, site_ca: CertificateAuthority
) -> None:
    # lab-3 as test_chart_on_kubelets.py leaves it (labelled, cordoned) or as the lab starts it
    # (labelled): unlabelled and cordoned, the site's nodes are the only ones of the release
    lab.core.patch_node(
        OUTSIDE, {"metadata": {"labels": {NETWORK_LABEL: None}}, "spec": {"unschedulable": True}}
    )
    for name in NODES:
        lab.core.patch_node(name, {"metadata": {"labels": {SITE_LABEL: SITE}}})
    lab.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    lab.core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name=CA_SECRET),
            type="kubernetes.io/tls",
            string_data={
                "tls.crt": site_ca.cert_path.read_text(),
                "tls.key": site_ca.key_path.read_text(),
            },
        ),
    )
    helm.run(
        "install", RELEASE, str(CHART), "--namespace", NAMESPACE,
        "--values", str(LAB_VALUES), "--values", str(SITES_VALUES),
        "--set", f"sites.names={{{SITE}}}",
        # two nodes of 2 cores hold the whole release and a redirector only with smaller
        # servers (nothing here measures throughput; the scheduler places the rest anywhere)
        "--set", "servers.cpu=250m",
        "--set", f"certificates.ca.existingSecret={CA_SECRET}",
        "--set", f"certificates.ca.subject={CA_SUBJECT}",
        timeout=300,
    )  # fmt: skip

    # the site's pods only: the rest of the release (webapp, database) is not what this tests
    def running() -> list[client.V1Pod]:
        found = site_pods(lab)
        return found if len(found) == 1 + 2 * len(NODES) and all(map(all_ready, found)) else []

    try:
        pods = wait_for(running, "the redirector and every node's servers Running and Ready", 300)
    except pytest.fail.Exception:
        pytest.fail(f"the site's pods never all ran: {pod_states(lab)}")
    redirector = next(
        p for p in pods if p.metadata.labels["app.kubernetes.io/component"] == "redirector"
    )
    assert redirector.spec.node_name in NODES
    assert [c.name for c in redirector.spec.containers] == ["xrootd", "cmsd", "certificate-renewal"]
    data_servers = [p for p in pods if p.metadata.labels["app.kubernetes.io/component"] == "xrootd"]
    assert sorted(p.spec.node_name for p in data_servers) == NODES
    for pod in data_servers:  # the site's DaemonSet, not the standalone one
        assert pod.metadata.labels["tpc-bench/site"] == SITE
        assert "cmsd" in [c.name for c in pod.spec.containers]


def test_discovery_reports_the_redirector_apart_and_the_hosts_with_their_site(
    lab: KubeletLab,
) -> None:
    discovery = KubernetesDiscovery(api_client=lab.api, namespace=NAMESPACE)
    (redirector,) = discovery.redirectors()
    node = lab.pods("redirector")[0].spec.node_name
    assert (redirector.name, redirector.site, redirector.redirector) == ("a-rdr", SITE, True)
    assert redirector.address == lab.address(node)
    assert redirector.ports == {"https": 1095, "root": 1095}
    hosts = discovery.discover()
    assert [h.name for h in hosts] == NODES
    for host in hosts:
        assert (host.site, host.redirector, host.address) == (SITE, False, lab.address(host.name))
        assert host.ports["https"] == host.ports["root"] == 1094


def test_a_get_through_the_redirector_is_served_by_a_data_server_of_the_site(
    lab: KubeletLab, site_ca: CertificateAuthority, tmp_path: Path
) -> None:
    client_cert = site_ca.issue_client("orchestrator")  # the DN the signer's grid map names
    curl = ["curl", "-sS", "--cert", str(client_cert.cert), "--key", str(client_cert.key),
            "--capath", str(site_ca.certdir), "--max-time", "30"]  # fmt: skip
    node = lab.pods("redirector")[0].spec.node_name
    other = next(n for n in NODES if n != node)
    url = f"https://{lab.address(node)}:1095{source_name(FILE_SIZE)}"
    servers = {lab.address(n) for n in NODES}

    def redirected() -> str | None:  # the manager redirects once its servers have logged in
        said = lab.in_node(
            other, [*curl, "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", url]
        )
        return said if said.startswith("302 ") else None

    said = wait_for(redirected, "a 302 from the site's redirector", timeout=120)
    found = re.fullmatch(r"302 https://([0-9.]+):1094/+(.*)", said)
    assert found, said
    assert found.group(1) in servers and "/" + found.group(2) == source_name(FILE_SIZE)
    # the manager spreads lookups over the site's data servers (cmsd's round robin)
    seen = {found.group(1)}
    for _ in range(6):
        if seen == servers:
            break
        said = lab.in_node(other, [*curl, "-o", "/dev/null", "-w", "%{redirect_url}", url])
        seen.add(said.removeprefix("https://").split(":")[0])
    assert seen == servers
    # followed: the bytes of the data server it ended at
    through, direct = tmp_path / "through", tmp_path / "direct"
    served = lab.in_node(other, [*curl, "-L", "-o", str(through), "-w", "%{url_effective}", url])
    found = re.fullmatch(r"https://([0-9.]+):1094/+(.*)", served)
    assert found and found.group(1) in servers, served
    assert through.stat().st_size == FILE_SIZE
    lab.in_node(other, [*curl, "-o", str(direct), served])
    digest = hashlib.sha256(through.read_bytes()).hexdigest()
    assert digest == hashlib.sha256(direct.read_bytes()).hexdigest()


def test_a_root_read_through_the_redirector_gets_a_data_servers_file(
    lab: KubeletLab, site_ca: CertificateAuthority, tmp_path: Path
) -> None:
    """root:// (GSI): the redirector answers the open with kXR_redirect to a data server."""
    client_cert = site_ca.issue_client("orchestrator")
    node = lab.pods("redirector")[0].spec.node_name
    other = next(n for n in NODES if n != node)
    curl = ["curl", "-sS", "--cert", str(client_cert.cert), "--key", str(client_cert.key),
            "--capath", str(site_ca.certdir), "--max-time", "30"]  # fmt: skip
    digests = set()
    for name in NODES:  # each data server's own source file (each wrote its own)
        direct = tmp_path / f"direct-{name}"
        served = f"https://{lab.address(name)}:1094{source_name(FILE_SIZE)}"
        lab.in_node(other, [*curl, "-o", str(direct), served])
        digests.add(hashlib.sha256(direct.read_bytes()).hexdigest())
    env = ["env", f"X509_USER_CERT={client_cert.cert}", f"X509_USER_KEY={client_cert.key}",
           f"X509_CERT_DIR={site_ca.certdir}", "XrdSecGSICREATEPROXY=0",
           "XrdSecGSISRVNAMES=*"]  # fmt: skip
    got = tmp_path / "root"
    url = f"root://{lab.address(node)}:1095/{source_name(FILE_SIZE)}"
    lab.in_node(other, [*env, "xrdcp", "--nopbar", "-f", url, str(got)], timeout=120)
    assert got.stat().st_size == FILE_SIZE
    assert hashlib.sha256(got.read_bytes()).hexdigest() in digests


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_a_copy_to_the_site_lands_on_one_of_its_data_servers(
    lab: KubeletLab, site_ca: CertificateAuthority, protocol: str
) -> None:
    """Third-party copies from one node of the site to the site's redirector, as a site
    campaign sends them (campaign/site_scope.py): each follows the redirect to a data server
    of the site, which stores the file; the records name it and time the redirect."""
    client_cert = site_ca.issue_client("orchestrator")
    creds = ClientCredentials(client_cert.cert, client_cert.key, site_ca.certdir)
    discovery = KubernetesDiscovery(api_client=lab.api, namespace=NAMESPACE)
    (front,) = discovery.redirectors()
    source = discovery.discover()[0]
    request = MeasurementRequest.between(
        source, front, protocol, 1, transfers=2, file_size=FILE_SIZE
    )
    record = asyncio.run(run_measurement(request, creds=creds, measure_latency=False))
    assert record.succeeded == 2, [t.message for t in record.transfers]
    servers = {lab.address(n) for n in NODES}
    for copy in record.transfers:
        assert copy.redirects >= 1 and copy.phases["redirect"] > 0, copy.phases
        assert copy.destination_server is not None
        assert copy.destination_server.rpartition(":")[0] in servers, copy.destination_server
    assert record.cleanup_errors == []  # the deletes went through the redirector too


def test_lab_down_leaves_nothing_and_puts_the_kernel_settings_back(
    kubelet_cluster_down: Callable[[], None],
) -> None:
    """No process, namespace, log link, directory, cgroup, mount or shim of the lab left, the
    kernel settings back (tests/support/kubelet_lab.py, take_down_and_check): the cluster's
    end, after test_chart_on_kubelets.py's tests too when both files run."""
    kubelet_cluster_down()

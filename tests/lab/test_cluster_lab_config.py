"""The cluster lab's pure parts, without starting anything: each node's agent configuration
keeps to its own paths, the API server's certificate is valid where pods look for it, and the
kernel-settings lease puts back what the first lab found."""

from __future__ import annotations

import ipaddress
import json
import tomllib
from pathlib import Path

import pytest
from cryptography import x509

from orchestrator.lab.kube import kernel_settings, node_config
from orchestrator.lab.kube.control_plane import ControlPlane, KubeUser
from orchestrator.lab.kube.node_config import NodeLayout
from orchestrator.lab.topology import NETNS, LabNetwork, plan_nodes

NETWORK = LabNetwork(prefix="tpcku", subnet_offset=30)


def layouts(tmp_path: Path) -> list[NodeLayout]:
    plans = plan_nodes(2, NETNS, NETWORK)
    return [
        NodeLayout(plan, tmp_path / plan.name, node_config.cgroup_root(NETWORK.prefix, plan))
        for plan in plans
    ]


def test_each_node_has_its_own_paths_cgroup_and_pod_subnet(tmp_path: Path) -> None:
    one, two = layouts(tmp_path)
    configs = []
    for layout in (one, two):
        containerd = tomllib.loads(node_config.containerd_config(layout))
        cri = containerd["plugins"]["io.containerd.grpc.v1.cri"]
        assert containerd["root"].startswith(str(layout.root))
        assert containerd["grpc"]["address"] == str(layout.containerd_socket)
        assert cri["cni"]["conf_dir"] == str(layout.cni_conf_dir)  # never podman's
        assert cri["restrict_oom_score_adj"] is True
        assert cri["sandbox_image"] == node_config.PAUSE_IMAGE
        kubelet = json.loads(node_config.kubelet_config(layout))
        assert kubelet["address"] == layout.plan.address
        assert kubelet["cgroupRoot"] == layout.cgroup_root
        assert kubelet["podLogsDir"].startswith(str(layout.root))
        assert kubelet["authentication"]["anonymous"]["enabled"] is False
        cni = json.loads(node_config.cni_config(layout))
        ipam = cni["plugins"][0]["ipam"]
        assert ipam["dataDir"].startswith(str(layout.root))
        subnet = ipaddress.ip_network(ipam["ranges"][0][0]["subnet"])
        assert not subnet.overlaps(ipaddress.ip_network("10.99.0.0/16"))
        assert subnet.subnet_of(ipaddress.ip_network(node_config.POD_SUPERNET))
        configs.append((containerd["root"], kubelet["cgroupRoot"], str(subnet)))
    assert len({c[0] for c in configs}) == len({c[1] for c in configs}) == 2
    assert len({c[2] for c in configs}) == 2


def test_kube_proxy_writes_no_global_conntrack_setting(tmp_path: Path) -> None:
    config = json.loads(node_config.kube_proxy_config(layouts(tmp_path)[0], tmp_path / "kc"))
    assert config["mode"] == "iptables"
    assert config["conntrack"]["maxPerCore"] == 0 and config["conntrack"]["min"] == 0


def test_the_api_servers_certificate_is_valid_for_pods_and_nodes(tmp_path: Path) -> None:
    plane = ControlPlane(
        workdir=tmp_path,
        bin_dir=tmp_path,
        address="10.99.30.1",
        port=6443,
        etcd_port=1,
        etcd_peer_port=2,
        etcd_data=tmp_path / "etcd",
    )
    node = KubeUser("system:node:lab-1", ("system:nodes",))
    plane.write_credentials([node])
    served = x509.load_pem_x509_certificate((tmp_path / "apiserver.crt").read_bytes())
    names = served.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    assert {"10.99.30.1", "10.96.0.1"} <= ips
    assert "kubernetes.default.svc.cluster.local" in names.get_values_for_type(x509.DNSName)
    tokens = (tmp_path / "tokens.csv").read_text().splitlines()
    assert f'{node.token},system:node:lab-1,system:node:lab-1,"system:nodes"' in tokens
    assert "--bind-address=10.99.30.1" in plane.apiserver_argv()
    assert (tmp_path / "apiserver.key").stat().st_mode & 0o077 == 0


@pytest.fixture
def fake_sysctls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The six settings as files, and the lease beside them: nothing of the machine's."""
    root = tmp_path / "sys"
    for name in kernel_settings.KUBELET_SYSCTLS:
        path = root / name.replace(".", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("0\n")
    monkeypatch.setattr(kernel_settings, "_proc_path", lambda n: root / n.replace(".", "/"))
    monkeypatch.setattr(kernel_settings, "LEASE", tmp_path / "lease.json")
    (tmp_path / "present").mkdir()
    dirs = (str(tmp_path / "present"), str(tmp_path / "absent"))
    monkeypatch.setattr(kernel_settings, "MACHINE_DIRS", dirs)
    return root


def test_the_last_lab_to_stop_puts_back_what_the_first_one_found(fake_sysctls: Path) -> None:
    panic = fake_sysctls / "kernel" / "panic"
    kernel_settings.take("lab-a")
    panic.write_text("10\n")  # what kubelet does
    made = fake_sysctls.parent / "absent"
    (made / "device-plugins").mkdir(parents=True)  # and a directory it makes
    kernel_settings.take("lab-b")  # a second lab records nothing new
    assert kernel_settings.give_back("lab-a") == []
    assert panic.read_text().strip() == "10"  # lab-b's kubelets still run
    assert made.is_dir()
    assert kernel_settings.give_back("lab-b") == []
    assert panic.read_text().strip() == "0"
    assert not made.exists() and (fake_sysctls.parent / "present").is_dir()
    assert kernel_settings.holders() == []


def test_nodes_are_labelled_as_a_site_labels_them_for_the_chart() -> None:
    names = ("tpc-bench/link-gbps", "tpc-bench/site")
    assert node_config.node_labels(2.5, "UC San Diego", names) == {
        "tpc-bench.io/network": "100000",  # the chart's default node selector
        "tpc-bench/link-gbps": "2.5",
        "tpc-bench/site": "UC-San-Diego",
    }
    assert node_config.node_labels(None, None, names) == {"tpc-bench.io/network": "100000"}

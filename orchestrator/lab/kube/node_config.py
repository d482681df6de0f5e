"""One lab node's agent configuration: containerd, kubelet, kube-proxy and the CNI network.

Pure text from a `NodeLayout`; nothing here touches the machine. Every path is the node's
own (two kubelets sharing a root or a cgroup kill each other's pods), and nothing refers to
podman's CNI directory. The pod network is a bridge per node with a /24 outside
10.99.0.0/16, routed through the lab's router (cluster_lab.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from orchestrator.lab.kube.control_plane import CLUSTER_DNS_IP, CLUSTER_DOMAIN
from orchestrator.lab.topology import NodePlan

CNI_BIN_DIR = "/usr/lib/cni"  # Debian's containernetworking-plugins
POD_SUPERNET = "10.244.0.0/16"
PAUSE_IMAGE = "localhost/tpc-bench/pause:3.10"
NODE_LABEL = ("tpc-bench.io/network", "100000")  # the chart's default node selector


def pod_subnet(plan: NodePlan) -> str:
    """The node's pod subnet: 10.244.<the third octet of its lab subnet>.0/24."""
    octet = plan.address.split(".")[2]
    return f"10.244.{octet}.0/24"


def cgroup_root(network_prefix: str, plan: NodePlan) -> str:
    """The node's cgroup root, one per node (kubelet's cgroupRoot)."""
    return f"/tpcbench-{network_prefix}-{plan.name}"


@dataclass(frozen=True)
class NodeLayout:
    """Where one node's agents keep their files."""

    plan: NodePlan
    root: Path  # <lab>/kube/nodes/<name>
    cgroup_root: str

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd-state"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_state / "containerd.sock"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni"

    @property
    def cni_data_dir(self) -> Path:
        return self.root / "cni-ipam"

    @property
    def resolv_conf(self) -> Path:
        return self.root / "resolv.conf"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    @property
    def logs(self) -> Path:
        return self.root / "logs"


def containerd_config(layout: NodeLayout) -> str:
    """containerd 1.6 (config version 2) with a private root, state, socket and CNI dir."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{layout.containerd_root}"
state = "{layout.containerd_state}"
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
]

[grpc]
  address = "{layout.containerd_socket}"

[ttrpc]
  address = "{layout.containerd_state}/ttrpc.sock"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{layout.root}/opt"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  # a namespace cannot raise oom_score_adj: without this runc fails to start any container
  restrict_oom_score_adj = true

[{cri}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{layout.cni_conf_dir}"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
"""


def cni_config(layout: NodeLayout) -> str:
    """A bridge with host-local addresses from the node's pod subnet, plus loopback."""
    subnet = pod_subnet(layout.plan)
    gateway = subnet.replace(".0/24", ".1")
    config = {
        "cniVersion": "0.4.0",
        "name": "tpcbench-pods",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "hairpinMode": True,
                "ipMasq": False,  # routed, not hidden: the router knows every pod subnet
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(layout.cni_data_dir),
                    "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(config, indent=2) + "\n"


def kubelet_config(layout: NodeLayout) -> str:
    """A KubeletConfiguration (JSON is YAML) for this node (its kubeconfig is an argument)."""
    plan = layout.plan
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": plan.address,
        "healthzBindAddress": "127.0.0.1",
        "readOnlyPort": 0,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": layout.cgroup_root,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{layout.containerd_socket}",
        "podLogsDir": str(layout.pod_logs),
        "clusterDNS": [CLUSTER_DNS_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": str(layout.resolv_conf),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(layout.config_dir / "cluster-ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "nodeStatusUpdateFrequency": "10s",
    }
    return json.dumps(config, indent=2) + "\n"


def node_labels(
    rate_gbit: float | None, site: str | None, labels: tuple[str, str]
) -> dict[str, str]:
    """What the lab knows of a node, as a site labels its nodes for the chart: the benchmark
    label, its link capacity and its site (`labels`: the link and site label names)."""
    link_label, site_label = labels
    found = dict([NODE_LABEL])
    if rate_gbit:
        found[link_label] = f"{rate_gbit:g}"
    if site:  # a label value: letters, digits, '-', '_', '.'; 63 at most
        found[site_label] = re.sub(r"[^A-Za-z0-9_.-]+", "-", site).strip("-_.")[:63]
    return found


def kubelet_argv(
    binary: Path, layout: NodeLayout, kubeconfig: Path, labels: dict[str, str]
) -> list[str]:
    plan = layout.plan
    label = ",".join(f"{key}={value}" for key, value in labels.items())
    return [
        str(binary),
        f"--config={layout.config_dir / 'kubelet.json'}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={layout.kubelet_root}",
        f"--hostname-override={plan.name}",
        f"--node-ip={plan.address}",
        f"--node-labels={label}",
        "--v=1",
    ]


def kube_proxy_config(layout: NodeLayout, kubeconfig: Path) -> str:
    """iptables mode, and no global conntrack writes: a namespace may not change them."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": layout.plan.name,
        "bindAddress": layout.plan.address,
        "clusterCIDR": POD_SUPERNET,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }
    return json.dumps(config, indent=2) + "\n"

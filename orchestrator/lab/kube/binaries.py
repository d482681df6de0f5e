"""Where a cluster lab's programs and images come from, and the one-line errors when they are
missing: the control plane (`make simcluster`), the node agents and lab images (`make
kubenode`), our four images (`make images`), Debian's containerd, CNI plugins and iptables.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.lab.podman_runtime import image_name, podman

CONTROL_PLANE_CACHE = Path("/var/cache/tpc-bench/simcluster/bin")
NODE_CACHE = Path("/var/cache/tpc-bench/kubenode")
CONTROL_PLANE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
NODE_AGENTS = ("kubelet", "kube-proxy")
# program -> the Debian package that provides it
PACKAGES = {
    "etcd": "etcd-server",
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "iptables": "iptables",
    "nsenter": "util-linux",
    "podman": "podman",
}
CNI_PLUGINS = ("bridge", "host-local", "loopback", "portmap")
OUR_IMAGES = ("xrootd", "gridftp", "orchestrator", "webapp")
LAB_IMAGES = (
    "localhost/tpc-bench/pause:3.10",
    "localhost/tpc-bench/coredns:1.11.3",
    "localhost/tpc-bench/postgres:15",
)


@dataclass(frozen=True)
class ClusterBinaries:
    control_plane: Path  # directory of kube-apiserver, kube-controller-manager, kube-scheduler
    node: Path  # directory of kubelet, kube-proxy
    etcd: str

    def path(self, name: str) -> Path:
        folder = self.control_plane if name in CONTROL_PLANE else self.node
        return folder / name


def control_plane_dir() -> Path:
    return Path(os.environ.get("TPCBENCH_SIMCLUSTER_CACHE") or CONTROL_PLANE_CACHE)


def node_dir() -> Path:
    return Path(os.environ.get("TPCBENCH_KUBENODE_CACHE") or NODE_CACHE) / "bin"


def find_binaries() -> ClusterBinaries:
    """The built programs, or a UserError saying which make target builds them."""
    missing = [p for p, pkg in PACKAGES.items() if shutil.which(p) is None]
    if missing:
        packages = sorted({PACKAGES[p] for p in missing})
        raise UserError(
            f"--kubernetes needs {', '.join(missing)}; install with: make system-deps "
            f"(or: apt-get install {' '.join(packages)})"
        )
    plugins = [p for p in CNI_PLUGINS if not os.access(f"/usr/lib/cni/{p}", os.X_OK)]
    if plugins:
        raise UserError(
            f"--kubernetes needs the CNI plugins {', '.join(plugins)} in /usr/lib/cni; install "
            "with: apt-get install containernetworking-plugins"
        )
    binaries = ClusterBinaries(control_plane_dir(), node_dir(), shutil.which("etcd") or "etcd")
    for name in CONTROL_PLANE:
        if not os.access(binaries.path(name), os.X_OK):
            raise UserError(
                f"{binaries.path(name)} is not built; build the control plane with: "
                "make simcluster (about 15 minutes once per machine)"
            )
    for name in NODE_AGENTS:
        if not os.access(binaries.path(name), os.X_OK):
            raise UserError(
                f"{binaries.path(name)} is not built; build the node agents and lab images "
                "with: make kubenode"
            )
    return binaries


def check_images() -> list[str]:
    """Every image the cluster lab imports into its nodes, or a one-line UserError."""
    ours = [image_name(component) for component in OUR_IMAGES]
    for tag in [*ours, *LAB_IMAGES]:
        if podman("image", "exists", tag).returncode != 0:
            target = "make images" if tag in ours else "make kubenode"
            raise UserError(f"image {tag} is not built; build it with: {target}")
    return [*ours, *LAB_IMAGES]

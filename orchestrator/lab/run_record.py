"""What a lab created (namespaces, links, data directories, processes or containers, the WAN
delay program, a cluster's control plane and node agents), saved as it goes.

`lab up` writes this before each side effect, so `lab down` can undo a half-built lab too.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.lab.processes import ServerProcess
from orchestrator.lab.topology import LabNetwork


@dataclass(frozen=True)
class ServerContainer:
    """A container the lab started (podman runtime): `lab down` removes it by this name."""

    node: str
    service: str  # "xrootd" | "gridftp" | "probe"
    name: str


@dataclass
class ClusterRun:
    """What a cluster lab started (`lab up --kubernetes`), so `lab down` can undo a half-built
    cluster too."""

    workdir: str  # <lab>/kube: credentials, kubeconfigs, logs, node roots, volumes
    server: str = ""  # https://<host address>:6443
    etcd_data: str = ""
    kernel_lease: str = ""  # our name in the machine-wide kubelet sysctl lease, once taken
    control_plane: list[ServerProcess] = field(default_factory=list)
    agents: list[ServerProcess] = field(default_factory=list)  # node = the lab node's name
    nodes: list[str] = field(default_factory=list)  # lab nodes whose roots and cgroups exist

    def to_json(self) -> dict[str, Any]:
        return {
            "workdir": self.workdir,
            "server": self.server,
            "etcd_data": self.etcd_data,
            "kernel_lease": self.kernel_lease,
            "control_plane": [p.to_json() for p in self.control_plane],
            "agents": [p.to_json() for p in self.agents],
            "nodes": self.nodes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterRun:
        return cls(
            workdir=data["workdir"],
            server=data.get("server", ""),
            etcd_data=data.get("etcd_data", ""),
            kernel_lease=data.get("kernel_lease", ""),
            control_plane=[ServerProcess.from_json(p) for p in data.get("control_plane", [])],
            agents=[ServerProcess.from_json(p) for p in data.get("agents", [])],
            nodes=list(data.get("nodes", [])),
        )


@dataclass
class LabRun:
    path: Path
    mode: str
    network: LabNetwork
    runtime: str = "process"
    namespaces: list[str] = field(default_factory=list)
    host_interfaces: list[str] = field(default_factory=list)
    etc_netns_dirs: list[str] = field(default_factory=list)
    data_dirs: list[str] = field(default_factory=list)
    processes: list[ServerProcess] = field(default_factory=list)
    containers: list[ServerContainer] = field(default_factory=list)
    delay_line: ServerProcess | None = None  # the WAN delay program in the router (--rtt)
    token_issuer: ServerProcess | None = None  # the lab's token issuer service
    cluster: ClusterRun | None = None  # lab up --kubernetes: control plane and node agents
    profile: str | None = None  # lab up --profile NAME (paper_profile.py)

    def save(self) -> None:
        data: dict[str, Any] = {
            "mode": self.mode,
            "runtime": self.runtime,
            "network": asdict(self.network),
            "namespaces": self.namespaces,
            "host_interfaces": self.host_interfaces,
            "etc_netns_dirs": self.etc_netns_dirs,
            "data_dirs": self.data_dirs,
            "processes": [p.to_json() for p in self.processes],
            "containers": [asdict(c) for c in self.containers],
            "delay_line": self.delay_line.to_json() if self.delay_line else None,
            "token_issuer": self.token_issuer.to_json() if self.token_issuer else None,
            "cluster": self.cluster.to_json() if self.cluster else None,
            "profile": self.profile,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        os.replace(tmp, self.path)

    @classmethod
    def load(cls, path: Path) -> LabRun:
        data = json.loads(path.read_text())
        return cls(
            path=path,
            mode=data["mode"],
            runtime=data.get("runtime", "process"),
            network=LabNetwork(**data["network"]),
            namespaces=list(data["namespaces"]),
            host_interfaces=list(data["host_interfaces"]),
            etc_netns_dirs=list(data["etc_netns_dirs"]),
            data_dirs=list(data["data_dirs"]),
            processes=[ServerProcess.from_json(p) for p in data["processes"]],
            containers=[ServerContainer(**c) for c in data.get("containers", [])],
            delay_line=ServerProcess.from_json(line) if (line := data.get("delay_line")) else None,
            token_issuer=(
                ServerProcess.from_json(issuer) if (issuer := data.get("token_issuer")) else None
            ),
            cluster=ClusterRun.from_json(cluster) if (cluster := data.get("cluster")) else None,
            profile=data.get("profile"),
        )

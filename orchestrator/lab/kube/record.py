"""What a cluster lab started, saved in the lab's run record before each side effect, so that
`lab down` can undo a half-built cluster too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.lab.processes import ServerProcess


@dataclass
class ClusterRun:
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

"""The lab's endpoint inventory: what the orchestrator and `tpcbench lab status` read.

Shape: {"nodes": [Endpoint.to_json() + {"health": {...}, "tcp": {...}, "rtt": {...}}],
        "client": ClientCredentials, "file_size": N, "ca": "<dir>", "mode": "netns"|"loopback",
        "runtime": "process"|"podman", "wan": {...},
        "token_issuer": {"url": "https://...", "health": "ok" | reason},
        "profile": {"name": "paper", "given": [...], "file_size_rule": {...}} or {}}
A node's "tcp" is what its namespace really uses (congestion control, tcp_rmem, tcp_wmem);
its "rtt" maps each other node to {"target_ms", "measured_ms", "within_target"} (targets only
with an emulated WAN, `lab up --rtt`). "wan" holds the WAN settings, the delay program's state
and when the RTTs were last measured. "profile" says which `lab up --profile` the lab runs,
which of its settings were given instead (`given`), and the numbers behind its file size.
A site lab (`lab up --sites`) adds "sites": {name: {"hosts", "lan", "uplink_gbps",
"router_netns", "redirector": {"name", "address", "netns", "state"}}}, and each node its "site";
with `--redirectors`, "redirectors": {"regional"|"global": {"address", "netns", "state"}}.
A site lab's running redirectors (each site's manager, and the regional and global levels) are in
"redirector_nodes": [Endpoint.to_json() (redirector: true) + {"health": {...}}], apart from
"nodes": a campaign pairs the hosts, never a redirector.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.latency.target import rtt_within_target
from orchestrator.paths import tpcbench_home

NO_LAB = "no lab is running; start one with: tpcbench lab up --nodes 3"


def lab_dir(home: Path | None = None) -> Path:
    return (home or tpcbench_home()) / "lab"


def inventory_path(home: Path | None = None) -> Path:
    return lab_dir(home) / "inventory.json"


@dataclass(frozen=True)
class LabInventory:
    nodes: list[Endpoint]
    client: ClientCredentials
    file_size: int
    ca: Path | None = None
    mode: str = "netns"
    runtime: str = "process"
    health: dict[str, dict[str, Any]] = field(default_factory=dict)  # node name -> checks
    tcp: dict[str, dict[str, str]] = field(default_factory=dict)  # node name -> sysctls
    rtt_measured: dict[str, dict[str, float | None]] = field(default_factory=dict)  # src -> dst
    wan: dict[str, Any] = field(default_factory=dict)  # settings, delay_line, rtt_measured_at
    token_issuer: dict[str, str] = field(default_factory=dict)  # url, health
    profile: dict[str, Any] = field(default_factory=dict)  # lab up --profile: name, given, ...
    sites: dict[str, Any] = field(default_factory=dict)  # lab up --sites: site name -> layout
    redirectors: dict[str, Any] = field(default_factory=dict)  # --redirectors: level -> host
    redirector_nodes: list[Endpoint] = field(default_factory=list)  # running, --sites

    def node(self, name: str) -> Endpoint:
        for endpoint in self.nodes:
            if endpoint.name == name:
                return endpoint
        known = ", ".join(n.name for n in self.nodes)
        raise UserError(f"no lab node named {name!r}; the lab has: {known}")

    def pair_rtts(self, node: Endpoint) -> dict[str, dict[str, Any]]:
        """Each other node -> its target, last measured RTT and the verdict, from `node`."""
        measured = self.rtt_measured.get(node.name, {})
        pairs = {}
        for other in self.nodes:
            if other.name == node.name:
                continue
            target = node.rtt_targets_ms.get(other.name)
            value = measured.get(other.name)
            if target is None and value is None:
                continue
            pairs[other.name] = {
                "target_ms": target,
                "measured_ms": value,
                "within_target": rtt_within_target(value, target),
            }
        return pairs

    def to_json(self) -> dict[str, Any]:
        sites = {"sites": self.sites} if self.sites else {}  # a node lab's JSON stays as it was
        if self.redirectors:
            sites["redirectors"] = self.redirectors
        if self.redirector_nodes:
            sites["redirector_nodes"] = [
                {**r.to_json(), "health": self.health.get(r.name, {})}
                for r in self.redirector_nodes
            ]
        return {
            "nodes": [
                {
                    **n.to_json(),
                    "health": self.health.get(n.name, {}),
                    "tcp": self.tcp.get(n.name, {}),
                    "rtt": self.pair_rtts(n),
                }
                for n in self.nodes
            ],
            "client": self.client.to_json(),
            "file_size": self.file_size,
            "ca": str(self.ca) if self.ca else None,
            "mode": self.mode,
            "runtime": self.runtime,
            "wan": self.wan,
            "token_issuer": self.token_issuer,
            "profile": self.profile,
            **sites,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabInventory:
        redirectors = data.get("redirector_nodes") or []
        return cls(
            nodes=[Endpoint.from_json(n) for n in data["nodes"]],
            client=ClientCredentials.from_json(data["client"]),
            file_size=int(data["file_size"]),
            ca=Path(data["ca"]) if data.get("ca") else None,
            mode=data.get("mode", "netns"),
            runtime=data.get("runtime", "process"),
            health={n["name"]: n.get("health", {}) for n in [*data["nodes"], *redirectors]},
            tcp={n["name"]: n.get("tcp", {}) for n in data["nodes"]},
            rtt_measured={
                n["name"]: {dst: r.get("measured_ms") for dst, r in n.get("rtt", {}).items()}
                for n in data["nodes"]
            },
            wan=data.get("wan", {}),
            token_issuer=data.get("token_issuer", {}),
            profile=data.get("profile") or {},
            sites=data.get("sites") or {},
            redirectors=data.get("redirectors") or {},
            redirector_nodes=[Endpoint.from_json(r) for r in redirectors],
        )


def save_inventory(inventory: LabInventory, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(inventory.to_json(), indent=2) + "\n")
    os.replace(tmp, path)


def load_inventory(path: Path | None = None) -> LabInventory:
    """The running lab's inventory (default: $TPCBENCH_HOME/lab/inventory.json)."""
    path = path or inventory_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(NO_LAB) from None
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the lab inventory {path}: {exc}") from None
    try:
        return LabInventory.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(
            f"the lab inventory {path} is damaged ({exc}); restart the lab with: "
            "tpcbench lab down && tpcbench lab up --nodes 3"
        ) from None

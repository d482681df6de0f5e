"""The lab's endpoint inventory: what the orchestrator and `tpcbench lab status` read.

Shape: {"nodes": [Endpoint.to_json() + {"health": {...}}], "client": ClientCredentials,
        "file_size": N, "ca": "<dir>", "mode": "netns"|"loopback", "runtime": "process"|"podman"}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
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

    def node(self, name: str) -> Endpoint:
        for endpoint in self.nodes:
            if endpoint.name == name:
                return endpoint
        known = ", ".join(n.name for n in self.nodes)
        raise UserError(f"no lab node named {name!r}; the lab has: {known}")

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [{**n.to_json(), "health": self.health.get(n.name, {})} for n in self.nodes],
            "client": self.client.to_json(),
            "file_size": self.file_size,
            "ca": str(self.ca) if self.ca else None,
            "mode": self.mode,
            "runtime": self.runtime,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabInventory:
        return cls(
            nodes=[Endpoint.from_json(n) for n in data["nodes"]],
            client=ClientCredentials.from_json(data["client"]),
            file_size=int(data["file_size"]),
            ca=Path(data["ca"]) if data.get("ca") else None,
            mode=data.get("mode", "netns"),
            runtime=data.get("runtime", "process"),
            health={n["name"]: n.get("health", {}) for n in data["nodes"]},
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

"""The lab the image tests share: two nodes whose servers run from our images."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.lab import LabInventory, LabNetwork
from orchestrator.lab.datafiles import lab_data_dir

# Its own prefix and subnet (10.99.171-172.0/24): never a lab someone else runs.
PODMAN_NETWORK = LabNetwork(prefix="tpcbi", subnet_offset=170)
LAB_FILE_SIZE = 16 << 20


@dataclass(frozen=True)
class PodmanLab:
    home: Path
    inventory: LabInventory

    def host_data_root(self, node: str) -> Path:
        """Where a node's /data is on this machine."""
        return lab_data_dir(PODMAN_NETWORK.prefix) / node

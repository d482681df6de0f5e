"""Discovery in the lab: the endpoints the lab wrote into its inventory."""

from __future__ import annotations

from pathlib import Path

from orchestrator.endpoints import Endpoint


class LabDiscovery:
    """The lab inventory's nodes (`tpcbench lab up` writes the inventory)."""

    def __init__(self, inventory: str | Path) -> None:
        self.inventory = Path(inventory)

    def discover(self) -> list[Endpoint]:
        # Imported here so discovery does not depend on the lab package at import time.
        from orchestrator.lab.inventory import load_inventory

        return list(load_inventory(self.inventory).nodes)

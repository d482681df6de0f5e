"""Discovery in the lab: the endpoints the lab wrote into its inventory."""

from __future__ import annotations

from pathlib import Path

from orchestrator.endpoints import Endpoint


class LabDiscovery:
    """The lab inventory's nodes (`tpcbench lab up` writes the inventory).

    `inventory`: the inventory file; default the running lab's ($TPCBENCH_HOME/lab/...).
    Read on every `discover()`, so a restarted lab is picked up.
    """

    def __init__(self, inventory: str | Path | None = None) -> None:
        self.inventory = Path(inventory) if inventory is not None else None

    def discover(self) -> list[Endpoint]:
        # Imported here so discovery does not depend on the lab package at import time.
        from orchestrator.lab.inventory import load_inventory

        return list(load_inventory(self.inventory).nodes)

    def redirectors(self) -> list[Endpoint]:
        """The lab's running redirectors (`lab up --sites`): each site's manager, and the
        regional/global levels (no site); empty in a lab of nodes."""
        from orchestrator.lab.inventory import load_inventory

        return list(load_inventory(self.inventory).redirector_nodes)

    def level_rtts(self) -> dict[str, dict[str, float]]:
        """Each redirector's RTT target (ms) to each site, as the lab's emulated WAN placed
        them (for the lookups' level_rtt_ms)."""
        from orchestrator.lab.inventory import load_inventory
        from orchestrator.lab.site_servers import level_rtts_ms

        return level_rtts_ms(load_inventory(self.inventory))

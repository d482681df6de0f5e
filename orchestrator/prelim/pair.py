"""The two server instances a preliminary run copies between, on one node: started here on a
lab node, or attached to when they already run (the chart's Job runs them as sidecars).

Both ways use one layout: A (the source) and B (the destination) on these ports, with
their data in <data root>/a and <data root>/b.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.lab.extra_servers import ExtraServer, extra_servers
from orchestrator.lab.inventory import LabInventory
from orchestrator.prelim.sweeps import ServerPair
from orchestrator.servers import layout

PRELIM_SERVERS = (
    ExtraServer("a", {"https": 18443, "root": 11094, "gridftp": 12811}, (21000, 21099)),
    ExtraServer("b", {"https": 18444, "root": 11095, "gridftp": 12812}, (21100, 21199)),
)


@contextmanager
def lab_pair(home: Path, inventory: LabInventory, node: str) -> Iterator[ServerPair]:
    """A and B started on lab node `node` for the block; the lab's client credentials."""
    with extra_servers(home, inventory, node, "prelim", list(PRELIM_SERVERS)) as started:
        (a, a_data), (b, b_data) = started
        yield ServerPair(a, b, a_data, b_data, inventory.client, node)


def attached_pair(
    node: str,
    address: str,
    creds: ClientCredentials,
    host_dn: str | None,
    data_root: Path = layout.DATA_ROOT,
) -> ServerPair:
    """A and B already serving at `address` (the chart's prelim Job)."""
    ends = []
    for server in PRELIM_SERVERS:
        data = data_root / server.suffix
        ends.append(
            (
                Endpoint(
                    name=f"{node}-prelim-{server.suffix}",
                    address=address,
                    ports=dict(server.ports),
                    data_root=str(data),
                    host_dn=host_dn,
                ),
                data,
            )
        )
    (a, a_data), (b, b_data) = ends
    return ServerPair(a, b, a_data, b_data, creds, node)

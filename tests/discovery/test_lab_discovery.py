"""Lab discovery reads the inventory the lab writes (a real file, the lab's own writer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.discovery import make_discovery
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.inventory import LabInventory, save_inventory


def inventory(names: list[str]) -> LabInventory:
    return LabInventory(
        nodes=[Endpoint(name=n, address=f"10.99.0.{i}") for i, n in enumerate(names, 1)],
        client=ClientCredentials(cert=Path("c.pem"), key=Path("k.pem"), certdir=Path("ca")),
        file_size=1024,
    )


def test_lab_discovery_returns_the_inventory_nodes_and_rereads_it(tmp_path: Path) -> None:
    path = tmp_path / "inventory.json"
    save_inventory(inventory(["lab-1", "lab-2"]), path)
    discovery = make_discovery("lab", inventory=path)
    assert [(e.name, e.address) for e in discovery.discover()] == [
        ("lab-1", "10.99.0.1"),
        ("lab-2", "10.99.0.2"),
    ]
    save_inventory(inventory(["lab-1", "lab-2", "lab-3"]), path)
    assert [e.name for e in discovery.discover()] == ["lab-1", "lab-2", "lab-3"]


def test_no_lab_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no lab is running"):
        make_discovery("lab", inventory=tmp_path / "missing.json").discover()


def test_unknown_backend_is_a_user_error() -> None:
    with pytest.raises(UserError, match="known: kubernetes, lab"):
        make_discovery("consul")

"""The end-to-end campaign tests' lab, webapp and orchestrator
(tests/support/orchestrator_process.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.lab import LabInventory
from tests.support.orchestrator_process import Orchestrator, started_lab
from tests.support.real_webapp import RealWebapp, serving_webapp


@pytest.fixture
def lab() -> Iterator[tuple[Path, LabInventory]]:
    with started_lab(3) as started:
        yield started


@pytest.fixture
def four_node_lab() -> Iterator[tuple[Path, LabInventory]]:
    with started_lab(4) as started:
        yield started


@pytest.fixture(scope="session")
def webapp() -> Iterator[RealWebapp]:
    """One real webapp for the campaign tests; each campaign is told apart by its uuid."""
    with serving_webapp("tpcbench-orchweb-") as app:
        yield app


@pytest.fixture
def orchestrator(
    tmp_path: Path, lab: tuple[Path, LabInventory], webapp: RealWebapp
) -> Orchestrator:
    return Orchestrator(tmp_path, lab[0], webapp)

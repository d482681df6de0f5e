"""Fixtures: two real storage nodes (XRootD + GridFTP each) on loopback, shared by the tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import proc_scan
import pytest
from transfer_servers import BIG, SMALL, TwoNodes, start_two_nodes


@pytest.fixture(autouse=True)
def _processes_before_the_test() -> Iterator[None]:
    """Remember what already ran, so leftover checks judge only what the test started."""
    proc_scan.already_running = proc_scan.descendants()
    yield
    proc_scan.already_running = set()


@pytest.fixture(scope="session")
def two_nodes() -> Iterator[TwoNodes]:
    nodes = start_two_nodes([SMALL, BIG])
    try:
        yield nodes
    finally:
        nodes.stop()
        shutil.rmtree(nodes.base, ignore_errors=True)


@pytest.fixture
def fresh_destination(two_nodes: TwoNodes) -> Iterator[TwoNodes]:
    """For tests that kill or stop the destination's servers: restart them afterwards."""
    yield two_nodes
    destination = two_nodes.nodes[1]
    destination.stop()
    for leftover in destination.data_root.iterdir():
        leftover.unlink()
    destination.start()

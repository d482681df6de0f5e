"""A real 3-node lab, started once per test session (see tests/support/running_lab.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from ca.authority import CertificateAuthority
from orchestrator.lab import start_lab, stop_lab
from tests.support.running_lab import TEST_FILE_SIZE, TEST_NETWORK, RunningLab, make_home


@pytest.fixture(scope="session")
def running_lab() -> Iterator[RunningLab]:
    home = make_home()
    ca = CertificateAuthority.init(home / "ca")
    try:
        inventory = start_lab(home, 3, TEST_FILE_SIZE, network=TEST_NETWORK)
        yield RunningLab(home=home, inventory=inventory, ca=ca)
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)

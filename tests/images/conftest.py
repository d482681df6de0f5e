"""A lab running on the images (the `images` fixture, from tests/conftest.py, builds them)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.lab import start_lab, stop_lab
from tests.support.podman_lab import LAB_FILE_SIZE, PODMAN_NETWORK, PodmanLab


@pytest.fixture(scope="session")
def podman_lab(images: dict[str, str]) -> Iterator[PodmanLab]:
    home = Path(tempfile.mkdtemp(prefix="tpcbench-imagelab-"))
    os.chmod(home, 0o755)
    CertificateAuthority.init(home / "ca")
    try:
        inventory = start_lab(home, 2, LAB_FILE_SIZE, network=PODMAN_NETWORK, runtime="podman")
        yield PodmanLab(home=home, inventory=inventory)
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)

"""The images, built once per machine (images/build.sh, cached), and a lab running on them.

A failed build fails the tests that need it (never a skip): `make test` builds the images
before pytest starts, so here the build script only confirms they are current.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.podman import run_podman  # noqa: F401 (the tests import it from here)

from ca.authority import CertificateAuthority
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from orchestrator.lab.datafiles import lab_data_dir

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "images" / "build.sh"
COMPONENTS = ("xrootd", "gridftp", "orchestrator", "webapp")
# Its own prefix and subnet (10.99.171-172.0/24): never a lab someone else runs.
PODMAN_NETWORK = LabNetwork(prefix="tpcbi", subnet_offset=170)
LAB_FILE_SIZE = 16 << 20


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """component -> image name, every one present in podman's storage."""
    result = subprocess.run(
        [str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=3600, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"images/build.sh failed:\n{result.stderr[-4000:]}")
    tags = result.stdout.split()
    assert len(tags) == len(COMPONENTS), result.stdout
    return dict(zip(COMPONENTS, tags, strict=True))


@dataclass(frozen=True)
class PodmanLab:
    home: Path
    inventory: LabInventory

    def host_data_root(self, node: str) -> Path:
        """Where a node's /data is on this machine."""
        return lab_data_dir(PODMAN_NETWORK.prefix) / node


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

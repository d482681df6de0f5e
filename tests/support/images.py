"""The images, built once per machine by images/build.sh (cached): `make test` builds them
before pytest starts, so here the build script only confirms they are current."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "images" / "build.sh"
COMPONENTS = ("xrootd", "gridftp", "orchestrator", "webapp")


def ensure_images() -> dict[str, str]:
    """component -> image name, every one present in podman's storage; a failed build fails
    the test that needs it (never a skip)."""
    result = subprocess.run(
        [str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=3600, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"images/build.sh failed:\n{result.stderr[-4000:]}")
    tags = result.stdout.split()
    assert len(tags) == len(COMPONENTS), result.stdout
    return dict(zip(COMPONENTS, tags, strict=True))

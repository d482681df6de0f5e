"""podman with the project's settings, failing the test with podman's own words on an error."""

from __future__ import annotations

import subprocess

import pytest

from orchestrator.lab.podman_runtime import podman


def run_podman(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    result = podman(*args, timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"podman {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result

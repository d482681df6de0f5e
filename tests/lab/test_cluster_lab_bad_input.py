"""`lab up --kubernetes` before its programs or images are built, or with options a cluster lab
does not take: one line that says what to run, and nothing started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.lab.network import existing_namespaces

pytestmark = pytest.mark.lab
PREFIX = "tpckb"


def lab_up(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "TPCBENCH_HOME": str(home), "TPCBENCH_LAB_PREFIX": PREFIX, **env}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "lab", "up", "--kubernetes", "--nodes", "2", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def nothing_started(home: Path) -> None:
    assert not (home / "lab" / "run.json").exists()
    assert not any(name.startswith(PREFIX) for name in existing_namespaces())


def test_node_agents_not_built_names_make_kubenode(tmp_path: Path) -> None:
    line = one_line(lab_up(tmp_path, TPCBENCH_KUBENODE_CACHE=str(tmp_path / "empty")))
    assert line == (
        f"tpcbench: error: {tmp_path}/empty/bin/kubelet is not built; build the node agents "
        "and lab images with: make kubenode"
    )
    nothing_started(tmp_path)


def test_control_plane_not_built_names_make_simcluster(tmp_path: Path) -> None:
    line = one_line(lab_up(tmp_path, TPCBENCH_SIMCLUSTER_CACHE=str(tmp_path / "empty")))
    expected = "build the control plane with: make simcluster (about 15 minutes once per machine)"
    assert line.endswith(f"is not built; {expected}")
    nothing_started(tmp_path)


def test_our_images_not_built_names_make_images(tmp_path: Path) -> None:
    line = one_line(lab_up(tmp_path, TPCBENCH_IMAGE_PREFIX="localhost/not-built"))
    assert line.startswith("tpcbench: error: image localhost/not-built/xrootd:")
    assert line.endswith("is not built; build it with: make images")
    nothing_started(tmp_path)


def test_options_of_the_process_lab_are_refused(tmp_path: Path) -> None:
    line = one_line(lab_up(tmp_path, "--runtime", "podman"))
    assert "--kubernetes runs the servers as the chart's pods" in line
    nothing_started(tmp_path)

"""The chart's tests: helm (built once from the Go module proxy, cached), the chart rendered
with its values scenarios, and a release installed into the simulated cluster (whose
fixture is in tests/conftest.py). What the tests share: tests/support/helm_chart.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helm_chart import HELM_BUILD, Cluster, Helm
from tests.support.simcluster import SimCluster


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    result = subprocess.run(
        [str(HELM_BUILD)], capture_output=True, text=True, timeout=1800, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"scripts/helm/build.sh failed:\n{result.stderr[-3000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def helm(helm_binary: Path) -> Helm:
    return Helm(helm_binary)


@pytest.fixture(scope="session")
def cluster_helm(helm_binary: Path, sim_cluster: SimCluster) -> Helm:
    return Helm(helm_binary, sim_cluster.kubeconfig)


@pytest.fixture(scope="session")
def cluster(sim_cluster: SimCluster) -> Iterator[Cluster]:
    yield Cluster(sim_cluster, sim_cluster.api_client())

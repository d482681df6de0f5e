"""The chart's tests: helm (built once from the Go module proxy, cached), the chart rendered
with its values scenarios, and a release installed into the simulated cluster (whose
fixture is in tests/conftest.py). What the tests share: tests/support/helm_chart.py. For the
chart on real kubelets (test_chart_on_kubelets.py): the nodes' images, and the machine's
kernel settings and network namespaces as they were before its lab."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.lab.kube import kernel_settings
from orchestrator.lab.network import existing_namespaces
from tests.support.helm_chart import HELM_BUILD, Cluster, Helm
from tests.support.kubelet_lab import KUBENODE_BUILD
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


@pytest.fixture(scope="module")
def kubenode() -> None:
    result = subprocess.run([str(KUBENODE_BUILD)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"scripts/kubenode/build.sh failed:\n{result.stderr[-3000:]}")


@pytest.fixture(scope="module")
def machine_settings() -> dict[str, str]:
    """The kernel settings kubelet changes, as the machine had them before this lab."""
    return kernel_settings.read_settings()


@pytest.fixture(scope="module")
def namespaces_before() -> set[str]:
    return set(existing_namespaces())

"""The chart's tests: helm (built once from the Go module proxy, cached), the chart rendered
with its values scenarios, and a release installed into the simulated cluster (whose
fixture is in tests/conftest.py). What the tests share: tests/support/helm_chart.py.

The chart on real kubelets (test_chart_on_kubelets.py, test_chart_sites_on_kubelets.py): ONE
cluster lab for both (`kubelet_cluster`, started on first use: starting and stopping one
takes minutes), the nodes' images, and the machine's kernel settings and network namespaces
as they were before it. Its tests run as one block (the sites module's right after the main
one's) and its lab-down test once, last: each module has one, so that either still runs
alone; with both, the earlier one is deselected (pytest_collection_modifyitems below)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orchestrator.lab import stop_lab
from orchestrator.lab.cluster_lifecycle import start_cluster_lab
from orchestrator.lab.kube import kernel_settings
from orchestrator.lab.network import existing_namespaces
from tests.support.helm_chart import HELM_BUILD, Cluster, Helm
from tests.support.kubelet_lab import (
    CLUSTER_NETWORK,
    CLUSTER_NODES,
    KUBENODE_BUILD,
    take_down_and_check,
)
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


# -- the kubelet cluster lab -------------------------------------------------------------------


@pytest.fixture(scope="session")
def kubenode() -> None:
    result = subprocess.run([str(KUBENODE_BUILD)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.fail(f"scripts/kubenode/build.sh failed:\n{result.stderr[-3000:]}")


@pytest.fixture(scope="session")
def machine_settings() -> dict[str, str]:
    """The kernel settings kubelet changes, as the machine had them before the cluster lab."""
    return kernel_settings.read_settings()


@pytest.fixture(scope="session")
def namespaces_before() -> set[str]:
    return set(existing_namespaces())


@pytest.fixture(scope="session")
def kubelet_cluster(
    kubenode: None,
    images: dict[str, str],
    machine_settings: dict[str, str],
    namespaces_before: set[str],
) -> Iterator[Path]:
    """The cluster lab's home (TPCBENCH_HOME): three real kubelets behind an emulated WAN of
    10 ms and 4 Gbit/s, on CLUSTER_NETWORK's names. Stopped at the end of the session if the
    lab-down test did not run (a test picked alone, a failure)."""
    home = Path(tempfile.mkdtemp(prefix="tpcbench-kubelet-lab-"))
    try:
        start_cluster_lab(
            home, len(CLUSTER_NODES), network=CLUSTER_NETWORK, rtt="uniform:10ms", rate_gbit=4.0
        )
        yield home
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def kubelet_cluster_down(
    kubelet_cluster: Path, machine_settings: dict[str, str], namespaces_before: set[str]
) -> Callable[[], None]:
    """Takes the cluster lab down and checks it left nothing behind; asked for by the lab-down
    tests only, which is how the hook below knows them."""
    return lambda: take_down_and_check(kubelet_cluster, machine_settings, namespaces_before)


@pytest.hookimpl(trylast=True)  # after -k / -m have deselected what they do
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests on the kubelet cluster as one block where the first of them was, in their
    order, ended by the last collected lab-down test; the other lab-down tests deselected."""
    users = [i for i in items if "kubelet_cluster" in getattr(i, "fixturenames", ())]
    if not users:
        return
    downs = [i for i in users if "kubelet_cluster_down" in getattr(i, "fixturenames", ())]
    if downs[:-1]:
        config.hook.pytest_deselected(items=downs[:-1])
    others = [i for i in items if i not in users]
    first = items.index(users[0])
    block = [i for i in users if i not in downs] + downs[-1:]
    items[:] = [*others[:first], *block, *others[first:]]

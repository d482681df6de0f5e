"""Fixtures every test area may use: one real simulated Kubernetes cluster per test session
(etcd + control plane + kwok), shared by tests/cluster and tests/chart (each in namespaces
and with node labels of its own), and `eventually` for states that come with time.

The binaries are built once into a machine-wide cache; when they cannot be built or the
cluster cannot start, the tests fail (never skip).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from support.images import ensure_images
from support.simcluster import SimCluster, ensure_binaries

T = TypeVar("T")

# Generous: the machine is shared and has two cores. Only a state that never comes fails.
EVENTUALLY_TIMEOUT = 180.0


def poll_until(
    probe: Callable[[], T],
    accept: Callable[[T], bool],
    what: str,
    timeout: float = EVENTUALLY_TIMEOUT,
) -> T:
    """Poll `probe` until `accept` takes its value; fail with the last value if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"never reached: {what}; last value: {value!r}")
        time.sleep(0.5)


@pytest.fixture(scope="session")
def eventually() -> Callable[..., object]:
    """`eventually(probe, accept, what)`: see `poll_until`."""
    return poll_until


@pytest.fixture(scope="session")
def sim_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    bin_dir = ensure_binaries()
    with SimCluster(tmp_path_factory.mktemp("simcluster"), bin_dir) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def images() -> dict[str, str]:
    """component -> image name of our four images, built (once, cached) and present."""
    return ensure_images()

"""Fixtures every test area may use: one real simulated Kubernetes cluster per test session
(etcd + control plane + kwok), shared by tests/discovery and tests/chart (each in namespaces
and with node labels of its own), and `eventually` for states that come with time.

The binaries are built once into a machine-wide cache; when they cannot be built or the
cluster cannot start, the tests fail (never skip).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

# The helpers' own asserts report their operands too (before they are imported below).
pytest.register_assert_rewrite("tests.support")

from tests.support.images import ensure_images  # noqa: E402
from tests.support.polling import poll_until  # noqa: E402
from tests.support.simcluster import SimCluster, ensure_binaries  # noqa: E402

# Fixtures that tests in several folders use, defined beside the helpers they drive.
pytest_plugins = ["tests.support.ingest_server", "tests.support.two_nodes"]


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

"""Where the nodes under test are: one small interface, one backend per environment.

discovery = DISCOVERY_BACKENDS["kubernetes"](namespace="tpc-bench")
endpoints = discovery.discover()   # list[Endpoint], sorted by name
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from orchestrator.discovery.kubernetes import KubernetesDiscovery
from orchestrator.discovery.lab import LabDiscovery
from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError


class Discovery(Protocol):
    def discover(self) -> list[Endpoint]:
        """The nodes ready to be measured right now (call again to pick up changes)."""
        ...

    # Optional: backends that know of nodes they cannot measure (a NotReady node) have
    # `not_ready() -> dict[str, str]`, node -> why, as of the last discover(); a campaign
    # stores those nodes' measurements as failures with that reason.
    # Optional: backends of sites have `redirectors() -> list[Endpoint]` (redirector=True):
    # each site's front (its manager, `site` set) and the levels above (no site);
    # `campaign run --scope site` measures between the sites' fronts.


DISCOVERY_BACKENDS: dict[str, Callable[..., Discovery]] = {
    "kubernetes": KubernetesDiscovery,
    "lab": LabDiscovery,
}


def make_discovery(backend: str, **options: Any) -> Discovery:
    """The named backend, built with its keyword options."""
    try:
        factory = DISCOVERY_BACKENDS[backend]
    except KeyError:
        known = ", ".join(sorted(DISCOVERY_BACKENDS))
        raise UserError(f"unknown discovery backend {backend!r} (known: {known})") from None
    return factory(**options)


__all__ = [
    "DISCOVERY_BACKENDS",
    "Discovery",
    "KubernetesDiscovery",
    "LabDiscovery",
    "make_discovery",
]

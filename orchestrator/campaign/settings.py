"""What a campaign measures and how: its settings, and the plan they make over the nodes
(every ordered pair x every combination of the dimensions a transfer tool can run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from orchestrator.campaign.planner import (
    DEFAULT_PROTOCOLS,
    DEFAULT_STREAMS,
    MeasurementSpec,
    plan_measurements,
)
from orchestrator.prelim.baseline import DEFAULT_SECONDS as DEFAULT_BASELINE_SECONDS
from orchestrator.transfers import unsupported_reason


@dataclass(frozen=True)
class CampaignSettings:
    """What a campaign measures and how; everything but its collaborators."""

    protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    streams: tuple[int, ...] = DEFAULT_STREAMS
    auths: tuple[str, ...] = ("x509",)  # how the transfers are authorized: x509, token
    clients: tuple[str, ...] = ("native",)  # what drives the copies: native, gfal2
    transfers: int = 11
    file_size: int = 2**30
    max_parallel_pairs: int = 1
    stop_grace: float | None = None  # after a stop, running measurements are cancelled then
    trigger: str = "cli"  # cli | schedule | manual
    schedule_expr: str = ""  # the cron expression of a scheduled campaign
    rediscover_every: float = 30.0  # seconds between asking discovery for vanished nodes
    baseline: bool = False  # each ordered pair's link (iperf3) before its first measurement
    baseline_seconds: int = DEFAULT_BASELINE_SECONDS
    measure_options: Mapping[str, Any] = field(default_factory=dict)  # e.g. the timeout

    @property
    def dimensions(self) -> dict[str, Sequence[Any]]:
        """What every ordered pair is measured across: a MeasurementSpec field, its values."""
        return {
            "protocol": self.protocols,
            "streams": self.streams,
            "auth": self.auths,
            "client": self.clients,
        }

    @property
    def per_pair(self) -> int:
        """Measurements per ordered pair (the combinations a transfer tool can run)."""
        return sum(supports(spec) is None for spec in self._one_pair())

    def plan(self, nodes: Sequence[Any]) -> list[MeasurementSpec]:
        """Every ordered pair x every combination a transfer tool can run (`unsupported`).

        Which combinations run is asked once, for the pair a -> b, not for every pair."""
        runnable = {spec for spec in self._one_pair() if supports(spec) is None}
        return [
            spec
            for spec in plan_measurements(nodes, self.dimensions)
            if replace(spec, src="a", dst="b") in runnable
        ]

    def unsupported(self) -> list[str]:
        """Why the combinations left out of the plan cannot run, one line each."""
        return sorted({why for spec in self._one_pair() if (why := supports(spec)) is not None})

    def _one_pair(self) -> list[MeasurementSpec]:
        """Every combination of the dimensions, once (for the ordered pair a -> b)."""
        return [s for s in plan_measurements(["a", "b"], self.dimensions) if s.src == "a"]


def supports(spec: MeasurementSpec) -> str | None:
    """None when a transfer tool can take `spec`, else why not (e.g. gridftp with tokens)."""
    return unsupported_reason(spec.protocol, spec.client, spec.auth)

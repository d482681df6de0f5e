"""The check a campaign makes before it measures: is each pair's RTT the one the emulated WAN
promises (the rule is latency.target's, shared with `lab status`)?"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from orchestrator.endpoints import Endpoint
from orchestrator.latency.target import rtt_within_target

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RttCheck:
    """One ordered pair's target and measured RTT (ms)."""

    src: str
    dst: str
    target_ms: float | None
    measured_ms: float | None

    @property
    def within_target(self) -> bool | None:
        return rtt_within_target(self.measured_ms, self.target_ms)

    def describe(self) -> str:
        measured = "no RTT" if self.measured_ms is None else f"{self.measured_ms:.2f} ms"
        return f"{self.src} -> {self.dst}: target {self.target_ms:g} ms, measured {measured}"

    def to_json(self) -> dict[str, object]:
        return {
            "src": self.src,
            "dst": self.dst,
            "target_ms": self.target_ms,
            "measured_ms": self.measured_ms,
            "within_target": self.within_target,
        }


async def check_pair_rtts(
    endpoints: Sequence[Endpoint],
    rtt: Callable[[Endpoint, Endpoint, int], Awaitable[float | None]],
    port_of: Callable[[Endpoint], int],
) -> dict[tuple[str, str], RttCheck]:
    """Before a campaign: the RTT of every ordered pair that has a target, one pair at a time
    (an idle network, and no probe slowed by another's start-up); a pair off its target is
    measured once more, so a moment's contention is not reported as a WAN that is off."""

    async def measure(src: Endpoint, dst: Endpoint) -> RttCheck:
        try:
            value = await rtt(src, dst, port_of(dst))
        except Exception as exc:  # no RTT is a finding (the pair is off), not a crash
            log.warning("RTT %s -> %s failed: %s", src.name, dst.name, exc)
            value = None
        return RttCheck(src.name, dst.name, src.rtt_targets_ms[dst.name], value)

    checks = {}
    for src in endpoints:
        for dst in endpoints:
            if dst.name == src.name or dst.name not in src.rtt_targets_ms:
                continue
            check = await measure(src, dst)
            if check.within_target is False and check.measured_ms is not None:
                check = await measure(src, dst)  # no RTT at all is no passing contention
            checks[(src.name, dst.name)] = check
    return checks

"""Is a measured RTT the one the emulated WAN promises? The one rule, for `lab status`, the
lab's own check after `lab up`, and the check a campaign makes before it measures.

A pair is within its target when |measured - target| <= max(1 ms, 5% of the target); a pair
with a target but no measured RTT is off; a pair without a target is not checked (None).
"""

from __future__ import annotations

RTT_TOLERANCE_MS = 1.0
RTT_TOLERANCE_FRACTION = 0.05


def rtt_tolerance_ms(target_ms: float) -> float:
    return max(RTT_TOLERANCE_MS, RTT_TOLERANCE_FRACTION * target_ms)


def rtt_within_target(measured_ms: float | None, target_ms: float | None) -> bool | None:
    if target_ms is None:
        return None
    if measured_ms is None:
        return False
    return abs(measured_ms - target_ms) <= rtt_tolerance_ms(target_ms)

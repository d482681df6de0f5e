"""What a campaign adds to a measurement's JSON from what it knows of the pair: the links'
capacities, the TCP buffers, the emulated WAN's RTT target, where the RTT was taken from."""

from __future__ import annotations

from typing import Any

from orchestrator.campaign.rtt_check import RttCheck
from orchestrator.endpoints import Endpoint


def with_pair_context(
    measured: dict[str, Any],
    src: Endpoint,
    dst: Endpoint,
    check: RttCheck | None,
    rtt_from_orchestrator: bool,
) -> dict[str, Any]:
    """`measured` (a record's JSON) with the pair's context; returned for convenience."""
    for role, node in (("src", src), ("dst", dst)):
        # the webapp's grid thresholds follow the links; None: not known (any more)
        measured[f"{role}_link_gbps"] = node.link_gbps or None
    buffers = [node.tcp_buffer for node in (src, dst) if node.tcp_buffer]
    if buffers:  # what bounds one stream's window: the sender's and receiver's maximum
        measured["tcp_buffer_bytes"] = min(buffers)
    if check is not None:  # the emulated WAN's promise, kept or not, goes with the result
        measured["rtt_target_ms"] = check.target_ms
        measured["rtt_within_target"] = check.within_target
    if rtt_from_orchestrator and measured.get("rtt_ms") is not None:
        measured["rtt_from"] = "orchestrator"  # not the source's position (webapp ignores it)
    return measured

"""Round-trip time from a source node to a destination: median of several TCP connects.

A TCP connect returns after SYN / SYN-ACK, one round trip, and needs nothing but the
service port that is open anyway (ICMP may be filtered). One measuring function
(`connects.measure_connects`) runs wherever the source's network position is:
- in the lab, inside the source node's namespace: `ip netns exec NS python -m orchestrator.latency`;
- on a cluster, in the RTT probe beside the servers on every node (`probe_server`), which
  the orchestrator asks over HTTP (`position.measure_rtt_via_probe`);
- otherwise in-process, i.e. from the orchestrator's own position (logged as such).
`position.measure_rtt` picks the position. The command lines are in `__main__`.
"""

from orchestrator.latency.connects import (
    CONNECT_TIMEOUT,
    DEFAULT_COUNT,
    RttResult,
    connect_samples_ms,
    measure_connects,
    probe,
)
from orchestrator.latency.position import (
    MAX_SAMPLES,
    PROBE_DEFAULT_PORT,
    PROBE_PORT_NAME,
    measure_rtt,
    measure_rtt_via_probe,
    probe_prefix,
    probe_url,
    rtt_origin,
)
from orchestrator.latency.probe_server import is_host

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_COUNT",
    "MAX_SAMPLES",
    "PROBE_DEFAULT_PORT",
    "PROBE_PORT_NAME",
    "RttResult",
    "connect_samples_ms",
    "is_host",
    "measure_connects",
    "measure_rtt",
    "measure_rtt_via_probe",
    "probe",
    "probe_prefix",
    "probe_url",
    "rtt_origin",
]

"""The RTT probe's port: a container port named `probe` in the XRootD pod (a sidecar)."""

from __future__ import annotations

import datetime as dt

from kubernetes.client import (
    V1Container,
    V1ContainerPort,
    V1ObjectMeta,
    V1Pod,
    V1PodCondition,
    V1PodSpec,
    V1PodStatus,
)

from orchestrator.discovery.kubernetes import build_endpoints
from orchestrator.latency import rtt_origin

T0 = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def ready_pod(node: str, host_ip: str, containers: dict[str, dict[str, int]]) -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(name=f"p-{node}", creation_timestamp=T0),
        spec=V1PodSpec(
            node_name=node,
            host_network=True,
            containers=[
                V1Container(
                    name=name,
                    ports=[V1ContainerPort(name=n, container_port=p) for n, p in ports.items()],
                )
                for name, ports in containers.items()
            ],
        ),
        status=V1PodStatus(
            phase="Running",
            host_ip=host_ip,
            conditions=[V1PodCondition(type="Ready", status="True")],
        ),
    )


def test_probe_sidecar_port_becomes_the_endpoints_probe_port() -> None:
    xrootd = [
        ready_pod(
            "a",
            "10.0.0.1",
            {"xrootd": {"https": 9443, "root": 2094}, "rtt-probe": {"probe": 19106}},
        ),
        ready_pod("b", "10.0.0.2", {"xrootd": {"https": 9443, "root": 2094}}),
    ]
    gridftp = [
        ready_pod("a", "10.0.0.1", {"gridftp": {"gridftp": 3811}}),
        # only the XRootD pod carries the probe; a port of that name elsewhere is not it
        ready_pod("b", "10.0.0.2", {"gridftp": {"gridftp": 3811, "probe": 19107}}),
    ]
    a, b = build_endpoints(xrootd, gridftp)
    assert a.ports == {"https": 9443, "root": 2094, "gridftp": 3811, "probe": 19106}
    assert b.ports == {"https": 9443, "root": 2094, "gridftp": 3811}
    assert (rtt_origin(a), rtt_origin(b)) == ("probe", "orchestrator")

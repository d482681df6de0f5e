"""Endpoint building from Kubernetes objects, without a cluster (the client's own models)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubernetes.client import (
    V1Container,
    V1ContainerPort,
    V1Node,
    V1NodeCondition,
    V1NodeStatus,
    V1ObjectMeta,
    V1Pod,
    V1PodCondition,
    V1PodSpec,
    V1PodStatus,
)

from orchestrator.discovery.kubernetes import build_endpoints, pod_is_ready, unready_nodes
from orchestrator.endpoints import Endpoint

T0 = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def pod(
    node: str,
    host_ip: str,
    ports: dict[str, int],
    *,
    ready: str = "True",
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    created: dt.datetime = T0,
) -> V1Pod:
    return V1Pod(
        metadata=V1ObjectMeta(
            name=f"p-{node}",
            namespace="tpc",
            annotations=annotations,
            creation_timestamp=created,
            deletion_timestamp=T0 if deleting else None,
        ),
        spec=V1PodSpec(
            node_name=node,
            host_network=True,
            containers=[
                V1Container(
                    name="server",
                    ports=[V1ContainerPort(name=n, container_port=p) for n, p in ports.items()],
                )
            ],
        ),
        status=V1PodStatus(
            phase="Running",
            host_ip=host_ip,
            conditions=[V1PodCondition(type="Ready", status=ready)],
        ),
    )


def node(name: str, labels: dict[str, str]) -> V1Node:
    return V1Node(metadata=V1ObjectMeta(name=name, labels=labels))


def xrootd(node_name: str, ip: str, **kw: Any) -> V1Pod:
    return pod(node_name, ip, {"https": 9443, "root": 2094}, **kw)


def gridftp(node_name: str, ip: str, **kw: Any) -> V1Pod:
    return pod(node_name, ip, {"gridftp": 3811}, **kw)


def test_a_node_needs_both_pods_ready_and_not_deleting() -> None:
    endpoints = build_endpoints(
        [
            xrootd("a", "10.0.0.1"),
            xrootd("b", "10.0.0.2"),
            xrootd("c", "10.0.0.3"),
            xrootd("d", "10.0.0.4", deleting=True),
        ],
        [
            gridftp("a", "10.0.0.1"),
            gridftp("b", "10.0.0.2", ready="False"),
            gridftp("d", "10.0.0.4"),
        ],
    )
    assert [e.name for e in endpoints] == ["a"]


def test_endpoint_fields_come_from_pods_and_node_labels() -> None:
    nodes = {
        "a": node(
            "a",
            {
                "tpc-bench/site": "ucsd",
                "topology.kubernetes.io/zone": "zone-1",
                "tpc-bench/link-gbps": "100",
                "kubernetes.io/hostname": "a",
            },
        ),
        "b": node("b", {"topology.kubernetes.io/zone": "zone-2", "tpc-bench/link-gbps": "fast"}),
    }
    endpoints = build_endpoints(
        [
            xrootd("a", "10.0.0.1", annotations={"tpc-bench/data-root": "/srv/tpc"}),
            xrootd("b", "10.0.0.2"),
        ],
        [gridftp("a", "10.0.0.1"), gridftp("b", "10.0.0.2")],
        nodes,
    )
    assert endpoints == [
        Endpoint(
            name="a",
            address="10.0.0.1",
            ports={"https": 9443, "root": 2094, "gridftp": 3811},
            data_root="/srv/tpc",
            pod="tpc/p-a",
            site="ucsd",
            labels={
                "tpc-bench/site": "ucsd",
                "topology.kubernetes.io/zone": "zone-1",
                "tpc-bench/link-gbps": "100",
            },
            link_gbps=100.0,
        ),
        Endpoint(
            name="b",
            address="10.0.0.2",
            ports={"https": 9443, "root": 2094, "gridftp": 3811},
            data_root="/data",
            pod="tpc/p-b",
            site="zone-2",
            labels={"topology.kubernetes.io/zone": "zone-2", "tpc-bench/link-gbps": "fast"},
            link_gbps=None,
        ),
    ]


def test_the_sidecars_ports_beside_xrootd_are_read_and_the_pod_is_the_xrootd_one() -> None:
    """The RTT probe's and the link baseline's iperf3 server (chart: baseline.enabled), each
    its own container of the XRootD pod; a link baseline runs iperf3's client in that pod."""
    server = xrootd("a", "10.0.0.1")
    server.spec.containers += [
        V1Container(name="rtt-probe", ports=[V1ContainerPort(name="probe", container_port=9106)]),
        V1Container(name="iperf3", ports=[V1ContainerPort(name="iperf3", container_port=5301)]),
    ]
    other = gridftp("a", "10.0.0.1")
    other.metadata.name = "g-a"
    [endpoint] = build_endpoints([server], [other])
    assert endpoint.ports == {"https": 9443, "root": 2094, "gridftp": 3811, "probe": 9106,
                              "iperf3": 5301}  # fmt: skip
    assert endpoint.pod == "tpc/p-a"
    # without the sidecar (baseline.enabled false) there is no iperf3 port to use
    [plain] = build_endpoints([xrootd("a", "10.0.0.1")], [other])
    assert "iperf3" not in plain.ports


def test_unnamed_ports_fall_back_to_defaults_and_newest_ready_pod_wins() -> None:
    old = pod("a", "10.0.0.9", {}, created=T0)
    new = pod("a", "10.0.0.1", {}, created=T0 + dt.timedelta(minutes=1))
    [endpoint] = build_endpoints([new, old], [gridftp("a", "10.0.0.1")])
    assert endpoint.address == "10.0.0.1"
    assert endpoint.ports == {"https": 8443, "root": 1094, "gridftp": 3811}
    assert endpoint.site is None and endpoint.link_gbps is None


def test_pending_pod_is_not_ready() -> None:
    pending = V1Pod(
        metadata=V1ObjectMeta(name="p"), spec=V1PodSpec(containers=[]), status=V1PodStatus()
    )
    assert not pod_is_ready(pending)
    assert pod_is_ready(xrootd("a", "10.0.0.1"))


def not_ready_node(name: str, message: str) -> V1Node:
    condition = V1NodeCondition(type="Ready", status="Unknown", reason="NodeStatusUnknown",
                                message=message)  # fmt: skip
    return V1Node(metadata=V1ObjectMeta(name=name), status=V1NodeStatus(conditions=[condition]))


def test_nodes_with_our_pods_that_cannot_be_measured_say_why() -> None:
    xrootd_pods = [xrootd("a", "10.0.0.1"), xrootd("b", "10.0.0.2", ready="False"),
                   xrootd("c", "10.0.0.3", ready="False"), xrootd("d", "10.0.0.4")]  # fmt: skip
    gridftp_pods = [gridftp("a", "10.0.0.1"), gridftp("b", "10.0.0.2", ready="False"),
                    gridftp("c", "10.0.0.3"), gridftp("d", "10.0.0.4", deleting=True)]  # fmt: skip
    nodes = {
        "a": node("a", {}),
        "b": not_ready_node("b", "Kubelet stopped posting node status."),
        "c": node("c", {}),
        "d": node("d", {}),
    }
    ready = [e.name for e in build_endpoints(xrootd_pods, gridftp_pods, nodes)]
    assert ready == ["a"]
    reasons = unready_nodes(xrootd_pods, gridftp_pods, nodes, ready)
    assert reasons == {
        "b": "node b is NotReady: Kubelet stopped posting node status.",
        "c": "the xrootd pod p-c on c is not Ready",
    }  # d: only a rollout's old gridftp pod is missing, its successor is on the way

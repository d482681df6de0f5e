"""The RTT probe: the same code in-process and as `python -m orchestrator.latency`."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from orchestrator.endpoints import Endpoint
from orchestrator.latency import measure_rtt, probe, probe_prefix


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0), backlog=64) as server:
        yield server.getsockname()[1]


def test_probe_reports_median_of_successful_connects(listener: int) -> None:
    result = probe("127.0.0.1", listener, count=5)
    assert len(result["samples_ms"]) == 5
    assert result["rtt_ms"] == sorted(result["samples_ms"])[2]


def test_probe_of_closed_port_has_no_rtt(listener: int) -> None:
    with socket.socket() as spare:  # a port that certainly has no listener
        spare.bind(("127.0.0.1", 0))
        closed = spare.getsockname()[1]
    assert probe("127.0.0.1", closed, count=2) == {
        "address": "127.0.0.1",
        "port": closed,
        "samples_ms": [],
        "rtt_ms": None,
    }


def test_measure_rtt_in_process_and_through_an_exec_prefix(listener: int) -> None:
    src = Endpoint(name="a", address="127.0.0.1")
    dst = Endpoint(name="b", address="127.0.0.1")
    in_process = asyncio.run(measure_rtt(src, dst, listener, count=3))
    # `env` stands in for `ip netns exec NS` / `kubectl exec POD --`: the module runs there.
    via_command = asyncio.run(measure_rtt(src, dst, listener, count=3, exec_prefix=["env"]))
    assert in_process is not None and in_process > 0
    assert via_command is not None and via_command > 0


def test_lab_nodes_are_probed_from_inside_their_namespace() -> None:
    assert probe_prefix(Endpoint(name="a", address="10.99.1.2", netns="tpcb-1")) == [
        "ip",
        "netns",
        "exec",
        "tpcb-1",
    ]
    assert probe_prefix(Endpoint(name="a", address="10.99.1.2")) is None

"""gfal2 as the client when servers fail: down before, killed during (the native cases).

The two loopback nodes of transfer_servers.py; the scenarios are test_transfer_real_servers'.
"""

from __future__ import annotations

import signal

import pytest
from proc_scan import leftovers
from test_transfer_real_servers import measure, measure_while, service_of
from transfer_servers import SMALL, Node, TwoNodes

pytestmark = pytest.mark.lab
PROTOCOLS = ("https", "root", "gridftp")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_gfal2_destination_down_is_connect(fresh_destination: TwoNodes, protocol: str) -> None:
    fresh_destination.nodes[1].stop()
    record = measure(
        fresh_destination, protocol, 1, file_size=SMALL, measure_latency=False, client="gfal2"
    )
    assert record.client == "gfal2"
    assert {t.error_class for t in record.transfers} == {"connect"}, [
        t.message for t in record.transfers
    ]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_gfal2_destination_killed_mid_transfer_is_killed(
    fresh_destination: TwoNodes, protocol: str
) -> None:
    destination: Node = fresh_destination.nodes[1]
    record, under_way = measure_while(
        fresh_destination,
        protocol,
        lambda: destination.signal(service_of(protocol), signal.SIGKILL),
        all_under_way=False,
        timeout=60,
        client="gfal2",
    )
    assert record.failed == 3 and under_way
    for transfer in record.transfers:
        # A copy that was moving lost its server; one not yet started found none to talk to.
        expected = {"killed"} if transfer.index in under_way else {"killed", "connect"}
        assert transfer.error_class in expected, (transfer.index, transfer.message)
    assert leftovers(fresh_destination.server_groups(), record.uuid) == []

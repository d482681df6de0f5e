"""gfal2 as the client when a server is down before the copy (killed during: parametrized
with the native tools in test_transfer_real_servers).

The two loopback nodes of tests/support/two_nodes.py; the scenarios are
test_transfer_real_servers'.
"""

from __future__ import annotations

import pytest

from tests.support.two_nodes import SMALL, TwoNodes, measure

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

"""Our transfer tools through a real site redirector (an XRootD manager and its data
servers, tests/servers/redirector_cluster.py): the HTTPS tool follows the manager's 307 to
a data server, root:// is redirected inside xrdcp; each records the `redirect` phase, the
hops and the data server that served the destination, and the bytes land there.

The first HTTPS COPY to a name a manager has never looked up fails with 400 while it looks
(tests/servers/test_server_redirector.py): the HTTPS tool asks again when the endpoint is a
redirector (`Endpoint.redirector`), and only then.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from orchestrator.endpoints import Endpoint, source_name
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.transfers import HttpsTpc, XrootdTpc
from orchestrator.transfers.base import TransferTool
from orchestrator.transfers.record import TransferRecord
from tests.servers.redirector_cluster import (
    ADDRESS,
    SITE_A,
    SOURCE,
    Cluster,
    Node,
    running_cluster,
)

pytestmark = pytest.mark.lab
SIZE = 4 << 20
MANAGER, SERVERS = SITE_A[0].name, [plan.name for plan in SITE_A[1:]]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster(SIZE) as cluster:
        yield cluster


def endpoint(node: Node, redirector: bool = False) -> Endpoint:
    settings = node.settings
    ports = {"https": settings.https_port, "root": settings.root_port, "gridftp": 2811}
    return Endpoint(node.plan.name, ADDRESS, ports, str(settings.data_root), redirector=redirector)


def copy(
    cluster: Cluster, tool: TransferTool, protocol: str, name: str, redirector: bool = True
) -> TransferRecord:
    src, dst = endpoint(cluster[SOURCE.name]), endpoint(cluster[MANAGER], redirector)
    request = MeasurementRequest.between(src, dst, protocol, 2, transfers=1, file_size=SIZE)
    transfer = request.transfer_request(str(uuid.uuid4()), 0, cluster.creds, timeout=120)
    transfer = type(transfer)(**{**transfer.__dict__, "dst_path": name})
    return asyncio.run(tool.copy(transfer))


def look_up_first(cluster: Cluster, name: str, timeout: float = 30.0) -> None:
    """A HEAD at the manager: its lookup of the new name is done before the COPY comes.
    (A manager just started answers 500 until its data servers have logged in.)"""
    context = ssl.create_default_context(capath=str(cluster.creds.certdir))
    context.load_cert_chain(str(cluster.creds.cert), str(cluster.creds.key))
    deadline = time.monotonic() + timeout
    with httpx.Client(verify=context, timeout=60) as client:
        while (status := client.head(f"{cluster[MANAGER].url}{name}").status_code) == 500:
            assert time.monotonic() < deadline, "the manager still answers 500"
            time.sleep(0.5)
    assert status == 404


def landed_on(cluster: Cluster, name: str) -> str:
    (holder,) = [s for s in SERVERS if (cluster[s].data_root / name.lstrip("/")).exists()]
    source = cluster[SOURCE.name].data_root / source_name(SIZE).lstrip("/")
    assert (cluster[holder].data_root / name.lstrip("/")).read_bytes() == source.read_bytes()
    return f"{ADDRESS}:{cluster[holder].plan.port}"


@pytest.mark.parametrize("protocol", ["https", "root"])
def test_a_copy_to_a_site_manager_is_redirected_to_a_data_server_and_says_so(
    cluster: Cluster, protocol: str
) -> None:
    name = f"/tpcbench-redirected-{protocol}"
    if protocol == "https":
        look_up_first(cluster, name)
    tool = HttpsTpc("pull") if protocol == "https" else XrootdTpc()
    record = copy(cluster, tool, protocol, name)
    assert record.succeeded, record.message
    assert record.redirects == 1
    assert record.destination_server == landed_on(cluster, name)
    phases = record.phases
    assert phases["redirect"] > 0 and list(phases).index("redirect") < list(phases).index(
        "streaming"
    )
    assert sum(phases.values()) == pytest.approx(record.duration, abs=1e-6)
    entry = record.to_json()
    assert (entry["redirects"], entry["destination_server"]) == (1, record.destination_server)


def test_a_copy_between_hosts_records_no_redirect(cluster: Cluster) -> None:
    """The source alone, as a host: nothing new in the transfer's JSON."""
    src = endpoint(cluster[SOURCE.name])
    request = MeasurementRequest.between(src, src, "https", 1, transfers=1, file_size=SIZE)
    transfer = request.transfer_request(str(uuid.uuid4()), 0, cluster.creds, timeout=120)
    record = asyncio.run(HttpsTpc("pull").copy(transfer))
    assert record.succeeded, record.message
    assert (record.redirects, record.source_server, record.destination_server) == (0, None, None)
    assert "redirect" not in record.phases and "redirects" not in record.to_json()


def test_a_new_name_at_a_manager_is_asked_again_until_it_is_looked_up(cluster: Cluster) -> None:
    look_up_first(cluster, "/tpcbench-warm-up")  # the manager is up (its servers logged in)
    name = "/tpcbench-asked-again"
    record = copy(cluster, HttpsTpc("pull"), "https", name)
    assert record.succeeded, record.message
    assert record.redirects == 1 and record.destination_server == landed_on(cluster, name)
    # the lookup (>= one retry delay) is part of the redirect phase
    assert record.phases["redirect"] >= 1.0


def test_an_endpoint_not_known_as_a_redirector_gets_no_second_ask(cluster: Cluster) -> None:
    look_up_first(cluster, "/tpcbench-warm-up")
    record = copy(cluster, HttpsTpc("pull"), "https", "/tpcbench-not-asked-again", False)
    assert not record.succeeded
    assert (
        "COPY answered 400" in record.message and "Failed to open local resource" in record.message
    )
    assert "redirect" not in record.phases

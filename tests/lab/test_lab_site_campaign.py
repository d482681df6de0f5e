"""`tpcbench campaign run --scope site` on a real site lab (a:2,b:2 behind their managers, a
regional redirector above them), reporting to a real webapp (gunicorn + PostgreSQL):
- HTTPS-TPC, root:// TPC and GridFTP between the two sites, with the checksum step (adler32
  of source and destination compared: the bytes are checked), and the scaling sweep;
- what the webapp stores: scope, sites, hosts, each copy's data servers, its redirect phase;
- one data server of site b stopped (xrootd + cmsd): new copies to site b land on the other
  one and succeed, and the measurements say so (every destination server is b-2).
Real lab: prefix tpccs, subnets 10.99.31-34 (31 host, 32 uplinks, 33-34 LANs).
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from orchestrator.lab.network import existing_namespaces
from tests.support.orchestrator_process import Orchestrator
from tests.support.processes import processes_mentioning
from tests.support.real_webapp import RealWebapp, serving_webapp
from tests.support.running_lab import make_home

pytestmark = pytest.mark.lab

NETWORK = LabNetwork(prefix="tpccs", subnet_offset=31)
SIZE = 4 << 20
CAMPAIGN = ("--scope", "site", "--streams", "2", "--transfers", "4", "--file-size", "4MiB")


@pytest.fixture(scope="module")
def site_lab() -> Iterator[tuple[Path, LabInventory]]:
    if os.geteuid() != 0:
        pytest.fail("a site lab needs network namespaces: run as root")
    home = make_home()
    CertificateAuthority.init(home / "ca")
    try:
        yield (
            home,
            start_lab(
                home, file_size=SIZE, network=NETWORK, sites="a:2,b:2", redirectors="regional"
            ),
        )
    finally:
        stop_lab(home)
        leftovers = sorted(n for n in existing_namespaces() if n.startswith("tpccs-"))
        processes = processes_mentioning(str(home))
        shutil.rmtree(home, ignore_errors=True)
        assert (leftovers, processes) == ([], []), "lab down left these behind"


@pytest.fixture(scope="module")
def webapp() -> Iterator[RealWebapp]:
    with serving_webapp("tpcbench-sitecampaign-") as app:
        yield app


def run_campaign(orchestrator: Orchestrator, *extra: str) -> str:
    process = orchestrator.campaign(*CAMPAIGN, *extra)
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output
    return orchestrator.journal()["uuid"]


def stored(webapp: RealWebapp, campaign: str) -> list[tuple]:
    """(protocol, src, dst, scope, src_site, dst_site, hosts, succeeded, checksum, transfer
    source_server, destination_server, redirects, redirect phase) per stored transfer."""
    return webapp.query(
        """
        SELECT m.protocol, s.name, d.name, m.scope, m.src_site, m.dst_site, m.hosts,
               m.succeeded, m.checksum, t.source_server, t.destination_server, t.redirects,
               (t.phases ->> 'redirect')::float
        FROM results_measurement m
        JOIN results_campaign c ON c.id = m.campaign_id
        JOIN results_node s ON s.id = m.src_id
        JOIN results_node d ON d.id = m.dst_id
        JOIN results_transfer t ON t.measurement_id = m.id
        WHERE c.uuid = %s
        """,
        campaign,
    )


def addresses(inventory: LabInventory, site: str) -> dict[str, str]:
    return {n.address: n.name for n in inventory.nodes if n.site == site}


def test_a_site_campaign_through_the_fronts_and_its_sweep_is_stored(
    site_lab, webapp: RealWebapp, tmp_path: Path
) -> None:
    home, inventory = site_lab
    orchestrator = Orchestrator(tmp_path, home, webapp)
    campaign = run_campaign(
        orchestrator, "--protocols", "https,root,gridftp", "--checksum", "adler32",
        "--sweep-hosts", "--lookups",
    )  # fmt: skip
    rows = stored(webapp, campaign)
    # 2 ordered site pairs x 3 protocols x (the fronts + sweep points 1 and 2), 4 copies each
    assert len(rows) == 2 * 3 * 3 * 4
    assert all(r[7] == 4 and r[8] == "adler32" and r[3] == "site" for r in rows), rows
    sites = {"a": addresses(inventory, "a"), "b": addresses(inventory, "b")}
    for (
        protocol,
        src,
        dst,
        _,
        src_site,
        dst_site,
        hosts,
        *_,
        source,
        destination,
        hops,
        redirect,
    ) in rows:
        assert (src, dst) == (f"{src_site}-rdr", f"{dst_site}-rdr")
        # every copy names the data servers of the right sites that served it
        assert source.rpartition(":")[0] in sites[src_site], (source, src_site)
        assert destination.rpartition(":")[0] in sites[dst_site], (destination, dst_site)
        through_redirectors = hosts is None and protocol != "gridftp"
        assert (hops >= 1) == through_redirectors, (protocol, hosts, hops)
        assert (redirect is not None and redirect > 0) == through_redirectors
    sweep = {(r[0], r[6]) for r in rows if r[6] is not None}
    assert sweep == {(p, m) for p in ("https", "root", "gridftp") for m in (1, 2)}
    one_pair = {r[10] for r in rows if r[6] == 1 and r[0] == "https" and r[4] == "a"}
    assert len(one_pair) == 1  # the sweep's first point: one destination host
    # --lookups: each site from its manager (1 hop) and from the regional level (2 hops),
    # over https and root, each ending at a data server of that site
    lookups = webapp.query(
        """
        SELECT l.protocol, l.entry, l.level, l.site, l.hops, l.outcome, l.data_server
        FROM results_lookup l JOIN results_campaign c ON c.id = l.campaign_id
        WHERE c.uuid = %s
        """,
        campaign,
    )
    assert sorted((p, e, lv, s, h, o) for p, e, lv, s, h, o, _ in lookups) == sorted(
        (p, e, lv, s, h, "success")
        for p in ("https", "root")
        for s in ("a", "b")
        for e, lv, h in ((f"{s}-rdr", "local", 1), ("regional", "regional", 2))
    )
    for *_, site, _, _, server in lookups:
        assert server.split(":")[0] in {n.name for n in inventory.nodes if n.site == site}


def test_a_stopped_data_server_sends_new_copies_to_the_other(
    site_lab, webapp: RealWebapp, tmp_path: Path
) -> None:
    home, inventory = site_lab
    config = home / "lab" / "nodes" / "b-1" / "xrootd.cfg"
    stopped = processes_mentioning(f"-n b-1 -c {config}")  # its xrootd and its cmsd
    assert len(stopped) == 2, stopped
    for pid in stopped:
        os.kill(pid, signal.SIGTERM)
    orchestrator = Orchestrator(tmp_path, home, webapp)
    campaign = run_campaign(orchestrator, "--protocols", "https,root")
    rows = stored(webapp, campaign)
    assert len(rows) == 2 * 2 * 4 and all(r[7] == 4 for r in rows), rows
    b_2 = next(n.address for n in inventory.nodes if n.name == "b-2")
    to_b = [r[10] for r in rows if r[5] == "b"]
    from_b = [r[9] for r in rows if r[4] == "b"]
    assert {server.rpartition(":")[0] for server in to_b + from_b} == {b_2}

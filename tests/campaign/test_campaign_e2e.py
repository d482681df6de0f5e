"""End to end: a real lab (XRootD + GridFTP in network namespaces), the real webapp
(gunicorn + PostgreSQL), and `tpcbench campaign run` / `tpcbench orchestrator` as processes.
Outages are real too: the webapp is stopped, the orchestrator is SIGKILLed or stopped — and
nothing finished is lost or stored twice. Nodes that fail or vanish: test_campaign_nodes.py.
"""

from __future__ import annotations

import signal
import subprocess
from collections import Counter

import pytest

from orchestrator.campaign.settings import CampaignSettings
from orchestrator.report.reporter import Reporter
from tests.support.orchestrator_process import (
    Orchestrator,
    assert_each_spec_once,
    wait_until,
)

pytestmark = pytest.mark.lab


def test_full_campaign_lands_in_postgresql(orchestrator: Orchestrator, webapp) -> None:
    process = orchestrator.campaign("--protocols", "https,gridftp", "--streams", "8,1")
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output
    journal = orchestrator.journal()
    assert journal["state"] == "finished"
    rows = webapp.campaign_measurements(journal["uuid"])
    assert_each_spec_once(rows, 3 * 2 * 2 * 2)
    assert {r[0] for r in rows} == set(journal["finished_measurements"])
    assert {(r[3], r[4]) for r in rows} == {
        ("https", 8),
        ("https", 1),
        ("gridftp", 8),
        ("gridftp", 1),
    }
    assert all(r[5] == 2 and r[6] == 0 and r[7] == 2 for r in rows), rows
    assert all(r[8] is not None and r[8] >= 0 for r in rows)  # every pair's RTT
    assert webapp.campaign_state(journal["uuid"]) == "finished"
    assert orchestrator.spool().pending() == []
    assert "finished: 24 ok, 0 failed of 24" in " ".join(output.split())


def test_webapp_stopped_mid_campaign_loses_and_duplicates_nothing(
    orchestrator: Orchestrator, webapp
) -> None:
    process = orchestrator.campaign("--protocols", "https", "--streams", "8,1")
    try:
        wait_until(lambda: orchestrator.finished_count() >= 2)
        webapp.stop()
        spool = orchestrator.spool()
        wait_until(lambda: spool.depth() >= 2 or process.poll() is not None)
        depth_while_down = spool.depth()
    finally:
        webapp.start()
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output
    assert depth_while_down >= 1, "results must wait in the spool while the webapp is down"
    # Whatever the campaign's own last flush did not deliver, a restarted reporter does.
    Reporter(orchestrator.spool(), webapp.url, webapp.token).drain()
    journal = orchestrator.journal()
    rows = webapp.campaign_measurements(journal["uuid"])
    assert_each_spec_once(rows, 3 * 2 * 1 * 2)
    assert {r[0] for r in rows} == set(journal["finished_measurements"])
    assert orchestrator.spool().pending() == []
    assert orchestrator.spool().rejected() == []
    assert webapp.campaign_state(journal["uuid"]) == "finished"


def test_orchestrator_sigkilled_mid_campaign_then_restarted(
    orchestrator: Orchestrator, webapp
) -> None:
    service = orchestrator.service(
        "--transfers", "2", "--protocols", "https", "--streams", "8,1", "--run-on-start"
    )
    try:
        wait_until(lambda: orchestrator.finished_count() >= 3)
    finally:
        service.send_signal(signal.SIGKILL)
        service.communicate(timeout=60)
    journal = orchestrator.journal()
    assert journal["state"] == "running"  # it had no chance to say otherwise
    finished_before_kill = set(journal["finished_measurements"])
    assert finished_before_kill

    restarted = orchestrator.service("--once")
    output, _ = restarted.communicate(timeout=300)
    assert restarted.returncode == 0, output
    assert "interrupted" in output
    assert orchestrator.journal()["state"] == "interrupted"
    assert webapp.campaign_state(journal["uuid"]) == "interrupted"
    rows = webapp.campaign_measurements(journal["uuid"])
    stored = {r[0] for r in rows}
    assert finished_before_kill <= stored, "a finished measurement was lost"
    specs = Counter((r[1], r[2], r[3], r[4]) for r in rows)
    assert max(specs.values()) == 1
    assert len(rows) < 3 * 2 * 2  # the campaign was not silently completed or re-run
    assert orchestrator.spool().pending() == []


@pytest.mark.parametrize("grace", ["120", "0"], ids=["measurements-finish", "cancelled-at-once"])
def test_sigterm_mid_campaign_marks_it_interrupted_and_exits_cleanly(
    orchestrator: Orchestrator, webapp, grace: str
) -> None:
    service = orchestrator.service(
        "--transfers",
        "2",
        "--protocols",
        "https,gridftp",
        "--streams",
        "8,1",
        "--run-on-start",
        "--stop-grace",
        grace,
    )
    try:
        wait_until(lambda: orchestrator.finished_count() >= 2)
        service.send_signal(signal.SIGTERM)
        output, _ = service.communicate(timeout=300)
    finally:
        if service.poll() is None:
            service.kill()
    assert service.returncode == 0, output
    assert "stopped cleanly" in output and "Traceback" not in output
    journal = orchestrator.journal()
    assert journal["state"] == "interrupted"
    assert webapp.campaign_state(journal["uuid"]) == "interrupted"
    rows = webapp.campaign_measurements(journal["uuid"])
    assert {r[0] for r in rows} == set(journal["finished_measurements"])
    assert 2 <= len(rows) < 24
    assert orchestrator.spool().pending() == []
    # Transfer clients aimed at this lab's nodes (other tests may run their own meanwhile).
    pattern = r"(xrdcp|globus-url-copy).*10\.99\.22[1-3]\.2"
    stray = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    assert stray.stdout == "", "a cancelled transfer left a process behind"


def test_run_now_campaign_from_the_webapp_is_run_under_its_uuid(
    orchestrator: Orchestrator, webapp
) -> None:
    import httpx

    answer = httpx.post(
        f"{webapp.url}/api/v1/campaigns/",
        json={"trigger": "manual"},
        headers={"Authorization": f"Token {webapp.token}"},
    )
    assert answer.status_code == 201, answer.text
    requested = answer.json()["uuid"]
    assert webapp.campaign_state(requested) == "pending"
    service = orchestrator.service(
        "--transfers", "2", "--protocols", "https", "--streams", "1", "--once"
    )
    output, _ = service.communicate(timeout=600)
    assert service.returncode == 0, output
    assert orchestrator.journal()["uuid"] == requested
    assert webapp.campaign_state(requested) == "finished"
    assert_each_spec_once(webapp.campaign_measurements(requested), 6)
    trigger = webapp.query("SELECT trigger FROM results_campaign WHERE uuid = %s", requested)
    assert trigger == [("manual",)]


def test_a_campaign_over_auth_and_client_lands_with_its_dimensions(
    orchestrator: Orchestrator, webapp
) -> None:
    """`--auth x509,token --client native,gfal2`: every combination a tool can run is
    measured and stored with its authorization and client; the others are said, not run."""
    process = orchestrator.campaign(
        "--protocols", "https,root", "--streams", "1", "--auth", "x509,token",
        "--client", "native,gfal2",
    )  # fmt: skip
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output
    journal = orchestrator.journal()
    assert (journal["auths"], journal["clients"]) == (["x509", "token"], ["native", "gfal2"])
    rows = webapp.query(
        """
        SELECT m.protocol, m.auth, m.client, m.succeeded, m.failed
        FROM results_measurement m JOIN results_campaign c ON c.id = m.campaign_id
        WHERE c.uuid = %s
        """,
        journal["uuid"],
    )
    planned = CampaignSettings(
        protocols=("https", "root"), streams=(1,), auths=("x509", "token"),
        clients=("native", "gfal2"),
    )  # fmt: skip
    assert len(rows) == 6 * planned.per_pair  # 3 nodes: 6 ordered pairs
    combos = {(r[0], r[1], r[2]) for r in rows}
    assert {("https", "x509", "native"), ("https", "token", "native")} <= combos
    assert {("https", "x509", "gfal2"), ("root", "x509", "gfal2")} <= combos
    assert all(r[3] == 2 and r[4] == 0 for r in rows), rows
    for why in planned.unsupported():
        assert why in " ".join(output.split())

"""End to end, the nodes' side: a real lab's node stops or vanishes from discovery in the
middle of a campaign, and pairs that share no node run at once on real servers; the results
land in the real webapp (see test_campaign_e2e.py for the setting).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.campaign.settings import CampaignSettings
from orchestrator.lab.lifecycle import run_record_path
from orchestrator.lab.processes import stop as stop_process
from orchestrator.lab.run_record import LabRun
from orchestrator.report.reporter import Reporter
from orchestrator.report.spool import Spool
from tests.support.orchestrator_process import (
    FILE_SIZE,
    Orchestrator,
    assert_each_spec_once,
    wait_until,
)

pytestmark = pytest.mark.lab


def test_lab_node_stopped_mid_campaign_shows_up_as_failed_measurements(
    orchestrator: Orchestrator, webapp, lab
) -> None:
    home, _ = lab
    process = orchestrator.campaign("--protocols", "https,gridftp", "--streams", "1")
    try:
        wait_until(lambda: orchestrator.finished_count() >= 2)
    except AssertionError:
        process.kill()
        raise
    record = LabRun.load(run_record_path(home))
    for server in record.processes:
        if server.node == "lab-3":
            stop_process(server)
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 1, output  # some measurements failed: exit status says so
    journal = orchestrator.journal()
    assert journal["state"] == "finished"
    rows = webapp.campaign_measurements(journal["uuid"])
    assert_each_spec_once(rows, 3 * 2 * 2)
    failed = [r for r in rows if r[6] > 0]
    assert failed, "measurements with the stopped node must be recorded as failures"
    assert all("lab-3" in (r[1], r[2]) for r in failed)
    reasons = webapp.query(
        """
        SELECT DISTINCT t.error_class, t.message FROM results_transfer t
        JOIN results_measurement m ON m.id = t.measurement_id
        JOIN results_campaign c ON c.id = m.campaign_id
        WHERE c.uuid = %s AND t.outcome = 'failure'
        """,
        journal["uuid"],
    )
    assert reasons and all(cls is not None and message for cls, message in reasons), reasons
    healthy = [r for r in rows if "lab-3" not in (r[1], r[2])]
    assert healthy and all(r[6] == 0 for r in healthy)


class VanishingLab:
    """The lab's own discovery, except that `gone` drops out of it after `after` calls:
    what Kubernetes discovery reports when a node's pods stop being Ready mid-campaign."""

    def __init__(self, inventory: Path, gone: str, after: int) -> None:
        from orchestrator.discovery import LabDiscovery

        self.inner = LabDiscovery(inventory)
        self.gone = gone
        self.after = after
        self.calls = 0

    def discover(self):
        self.calls += 1
        nodes = self.inner.discover()
        return [n for n in nodes if self.calls <= self.after or n.name != self.gone]


def test_node_vanishing_from_discovery_fails_its_remaining_measurements(
    tmp_path, lab, webapp, monkeypatch
) -> None:
    from orchestrator.campaign.run import Campaign

    home, inventory = lab
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path))
    discovery = VanishingLab(home / "lab" / "inventory.json", "lab-2", after=3)
    reporter = Reporter(Spool(tmp_path / "spool"), webapp.url, webapp.token)
    settings = CampaignSettings(
        protocols=("https",),
        streams=(1,),
        transfers=2,
        file_size=FILE_SIZE,
        max_parallel_pairs=1,
        rediscover_every=0.0,
    )
    result = Campaign(
        settings, discovery=discovery, reporter=reporter, creds=inventory.client, home=tmp_path
    ).run()
    reporter.close()
    assert result.state == "finished" and result.total == 6
    rows = webapp.campaign_measurements(result.uuid)
    assert_each_spec_once(rows, 6)
    vanished = [m for m in result.measurements if m["failed"]]
    assert vanished and all("lab-2" in (m["src"], m["dst"]) for m in vanished)
    for m in vanished:
        assert {t["error_class"] for t in m["transfers"]} == {"connect"}
        assert "lab-2 is no longer ready" in m["transfers"][0]["message"]
    assert any(m["failed"] == 0 and "lab-2" in (m["src"], m["dst"]) for m in result.measurements)


def test_parallel_pairs_never_share_a_node_on_real_servers(tmp_path, four_node_lab, webapp) -> None:
    home, _ = four_node_lab
    orchestrator = Orchestrator(tmp_path, home, webapp)
    process = orchestrator.campaign(
        "--protocols", "https", "--streams", "1", "--max-parallel-pairs", "2"
    )
    output, _ = process.communicate(timeout=900)
    assert process.returncode == 0, output
    journal = orchestrator.journal()
    spans = webapp.query(
        """
        SELECT s.name, d.name, m.started, m.finished FROM results_measurement m
        JOIN results_campaign c ON c.id = m.campaign_id
        JOIN results_node s ON s.id = m.src_id JOIN results_node d ON d.id = m.dst_id
        WHERE c.uuid = %s
        """,
        journal["uuid"],
    )
    assert len(spans) == 12
    for i, (src_a, dst_a, start_a, end_a) in enumerate(spans):
        for src_b, dst_b, start_b, end_b in spans[i + 1 :]:
            if {src_a, dst_a} & {src_b, dst_b}:
                assert end_a <= start_b or end_b <= start_a, "a node was in two measurements"

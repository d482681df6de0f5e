"""End to end: a real lab (XRootD + GridFTP in network namespaces), the real webapp
(gunicorn + PostgreSQL), and `tpcbench campaign run` / `tpcbench orchestrator` as processes.
Outages are real too: the webapp is stopped, the orchestrator is SIGKILLed, a lab node's
servers are killed — and nothing finished is lost or stored twice."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.real_webapp import REPO, RealWebapp, serving_webapp

from ca.authority import CertificateAuthority
from orchestrator.campaign.settings import CampaignSettings
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from orchestrator.lab.lifecycle import run_record_path
from orchestrator.lab.processes import stop as stop_process
from orchestrator.lab.run_record import LabRun
from orchestrator.report.reporter import Reporter
from orchestrator.report.spool import Spool

pytestmark = pytest.mark.lab

FILE_SIZE = 1 << 20
NETWORK = LabNetwork(prefix="tpcbo", subnet_offset=220, base_port=24000)


def wait_until(condition: Callable[[], bool], timeout: float = 300.0) -> None:
    """Liveness wait for a condition (never an assertion about how long it took)."""
    pause = threading.Event()
    for _ in range(int(timeout / 0.1)):
        if condition():
            return
        pause.wait(0.1)
    assert condition(), "condition not reached"


@pytest.fixture
def lab() -> Iterator[tuple[Path, LabInventory]]:
    home = Path(tempfile.mkdtemp(prefix="tpcbench-orchtest-"))
    home.chmod(0o755)
    CertificateAuthority.init(home / "ca")
    try:
        yield home, start_lab(home, 3, FILE_SIZE, network=NETWORK)
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def webapp() -> Iterator[RealWebapp]:
    with serving_webapp("tpcbench-orchweb-") as app:
        yield app


class Orchestrator:
    """`tpcbench` subcommands run as child processes with their own TPCBENCH_HOME."""

    def __init__(self, state: Path, lab_home: Path, webapp: RealWebapp) -> None:
        self.state = state
        self.inventory = lab_home / "lab" / "inventory.json"
        self.webapp = webapp
        self.env = {
            **os.environ,
            "TPCBENCH_HOME": str(state),
            "TPCBENCH_API_TOKEN": webapp.token,
            "PYTHONPATH": str(REPO),
        }

    def spawn(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *argv],
            env=self.env,
            cwd=self.state,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def campaign(self, *extra: str) -> subprocess.Popen[str]:
        return self.spawn(
            "campaign",
            "run",
            "--inventory",
            str(self.inventory),
            "--report-to",
            self.webapp.url,
            "--transfers",
            "2",
            "--transfer-timeout",
            "60",
            *extra,
        )

    def service(self, *extra: str) -> subprocess.Popen[str]:
        """`tpcbench orchestrator` on this lab and webapp; its cron never fires in a test."""
        return self.spawn(
            "orchestrator",
            "--inventory",
            str(self.inventory),
            "--report-to",
            self.webapp.url,
            "--schedule",
            "0 0 1 1 *",
            "--metrics-port",
            "0",
            *extra,
        )

    def journals(self) -> list[dict]:
        folder = self.state / "campaigns"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]

    def journal(self) -> dict:
        (only,) = self.journals()
        return only

    def finished_count(self) -> int:
        journals = self.journals()
        return len(journals[0]["finished_measurements"]) if journals else 0

    def spool(self) -> Spool:
        return Spool(self.state / "spool")


@pytest.fixture
def orchestrator(tmp_path, lab, webapp) -> Orchestrator:
    return Orchestrator(tmp_path, lab[0], webapp)


def assert_each_spec_once(rows, expected: int) -> None:
    specs = Counter((r[1], r[2], r[3], r[4]) for r in rows)
    assert len(rows) == expected
    assert max(specs.values()) == 1, "a measurement was stored twice"


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
    from orchestrator.campaign.settings import CampaignSettings

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


@pytest.fixture
def four_node_lab() -> Iterator[tuple[Path, LabInventory]]:
    home = Path(tempfile.mkdtemp(prefix="tpcbench-orchtest4-"))
    home.chmod(0o755)
    CertificateAuthority.init(home / "ca")
    try:
        yield home, start_lab(home, 4, FILE_SIZE, network=NETWORK)
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


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

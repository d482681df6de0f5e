"""The service over real sockets: /healthz, /metrics, polling the webapp for "run now",
and a clean exit on SIGTERM when run as its own process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx

from orchestrator.campaign.settings import load_settings
from orchestrator.errors import UserError
from orchestrator.report.reporter import Reporter
from orchestrator.report.spool import Spool
from orchestrator.service.daemon import OrchestratorService
from tests.support.measurement_samples import sample_measurement

REPO = Path(__file__).resolve().parents[2]


def quiet_settings(tmp_path, monkeypatch, **flags):
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path / "home"))
    return load_settings(
        {"schedule": "0 0 1 1 *", "metrics_port": "0", **flags},
        env={},
    )


def test_healthz_and_metrics_over_http(tmp_path, monkeypatch) -> None:
    settings = quiet_settings(tmp_path, monkeypatch)
    spool = Spool(tmp_path / "spool")
    service = OrchestratorService(settings, reporter=Reporter(spool), home=tmp_path / "home")
    spool.put(sample_measurement())
    spool.put(sample_measurement())
    service.metrics.measurements.labels("ok").inc(3)
    server = service.serve_metrics()
    try:
        base = f"http://127.0.0.1:{server.port}"
        health = httpx.get(f"{base}/healthz")
        assert health.status_code == 200
        body = health.json()
        assert body["status"] == "ok" and body["spool_depth"] == 2
        assert body["campaign"] is None
        metrics = httpx.get(f"{base}/metrics")
        assert metrics.status_code == 200
        assert metrics.headers["content-type"].startswith("text/plain")
        text = metrics.text
        assert re.search(r"^tpcbench_spool_depth 2\.0$", text, re.M)
        assert re.search(r'^tpcbench_measurements_total\{outcome="ok"\} 3\.0$', text, re.M)
        assert re.search(r'^tpcbench_measurements_total\{outcome="failed"\} 0\.0$', text, re.M)
        assert "tpcbench_last_success_timestamp_seconds" in text
        assert "tpcbench_next_campaign_timestamp_seconds" in text
        service.stopping = True
        assert httpx.get(f"{base}/healthz").status_code == 503
        assert httpx.get(f"{base}/other").status_code == 404
    finally:
        server.close()


def test_a_pending_run_now_campaign_is_picked_up(tmp_path, monkeypatch, ingest) -> None:
    """The webapp holds a pending campaign; the service takes it (here it cannot start,
    since there is no lab: the campaign is then reported failed, not retried forever)."""
    settings = quiet_settings(tmp_path, monkeypatch, report_to=ingest.url, poll_interval="0")
    wanted = str(uuid.uuid4())
    ingest.campaigns[wanted] = {"uuid": wanted, "state": "pending", "trigger": "manual"}
    reporter = Reporter(Spool(tmp_path / "spool"), ingest.url, ingest.token)
    calls: list[str] = []

    def no_lab(s):
        calls.append(s.discovery)
        raise UserError("no lab is running")

    service = OrchestratorService(
        settings, reporter=reporter, context_factory=no_lab, home=tmp_path / "home"
    )
    service.run(once=True, stop=threading.Event())
    assert calls == ["lab"]
    assert ingest.campaigns[wanted]["state"] == "failed"
    assert 'state="failed",trigger="manual"' in service.metrics.exposition().decode()
    # Nothing pending any more: the next decision starts nothing.
    assert service.tick(threading.Event()) is None
    assert calls == ["lab"]


def test_sigterm_stops_the_service_cleanly(tmp_path) -> None:
    env = {
        **os.environ,
        "TPCBENCH_HOME": str(tmp_path / "home"),
        "TPCBENCH_SCHEDULE": "0 0 1 1 *",
        "PYTHONPATH": str(REPO),
    }
    env.pop("TPCBENCH_API_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "orchestrator", "--metrics-port", "0"],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = process.stderr.readline()
        port = int(re.search(r"127\.0\.0\.1:(\d+);", banner).group(1))
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert "stopped cleanly" in rest
    assert "Traceback" not in rest
    state = tmp_path / "home" / "spool"
    assert state.is_dir()  # the service set up its spool

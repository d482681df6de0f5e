"""The service fits scheduled campaigns to their cycle (fake clock, fake nodes): a rotation
continued by each cycle's campaign and by a restarted service, the deadline's missed
measurements, and what /metrics says."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from orchestrator.campaign.context import CampaignContext
from orchestrator.campaign.settings import load_settings
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.report.reporter import Reporter
from orchestrator.report.spool import Spool
from orchestrator.service.daemon import OrchestratorService
from orchestrator.transfers.record import TransferRecord
from tests.support.campaign_doubles import instant_measurement

START = datetime(2026, 11, 25, 11, 59, tzinfo=UTC)


class Nodes:
    def __init__(self, n: int) -> None:
        self.nodes = [Endpoint(name=f"n{i}", address="127.0.0.1") for i in range(n)]

    def discover(self) -> list[Endpoint]:
        return list(self.nodes)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def service(tmp_path: Path, monkeypatch, clock: Clock, step: timedelta, **flags: str):
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path / "home"))
    settings = load_settings(
        {"schedule": "*/10 * * * *", "protocols": "https", "streams": "1", **flags}, env={}
    )

    def measure(request: MeasurementRequest, **options: Any):
        clock.now += step
        record = instant_measurement(request, **options)
        now = datetime.now(UTC)
        record.transfers = [TransferRecord(0, "https", "a", "b", 0, 1, now, now, 1024, "success")]
        return record

    def context(settings) -> CampaignContext:
        return CampaignContext(Nodes(6), ClientCredentials(None, None, None), 1024)

    return OrchestratorService(
        settings,
        reporter=Reporter(Spool(tmp_path / "spool")),
        context_factory=context,
        measure=measure,
        clock=clock,
        home=tmp_path / "home",
    )


def test_scheduled_campaigns_rotate_and_a_restarted_service_continues(
    tmp_path: Path, monkeypatch
) -> None:
    # 6 nodes: 30 ordered pairs of 60 s (no history) one at a time = 30 min > 10 min
    clock = Clock()
    parts = []
    for cycle in range(4):  # a new service each cycle: only $TPCBENCH_HOME carries on
        clock.now = START + timedelta(minutes=10 * cycle)  # a minute before the slot
        run = service(tmp_path, monkeypatch, clock, timedelta(seconds=50))
        clock.now += timedelta(minutes=1)
        result = run.tick(threading.Event())
        assert result is not None and result.state == "finished"
        fit = run._journal()["cycle_fit"]
        parts.append((fit["part"], fit["k"], len(result.measurements)))
    assert [(p, k) for p, k, _ in parts] == [(1, 3), (2, 3), (3, 3), (1, 3)]
    assert sum(n for _, _, n in parts[:3]) == 30  # every ordered pair once in 3 cycles
    text = run.metrics.exposition().decode()
    assert re.search(r"^tpcbench_rotation_cycles 3\.0$", text, re.M)
    assert re.search(r"^tpcbench_campaign_cycle_seconds 600\.0$", text, re.M)
    assert re.search(r'^tpcbench_campaign_measurements\{state="planned"\} 1\d\.0$', text, re.M)
    for state in ("missed", "late", "failed"):
        assert re.search(rf'^tpcbench_campaign_measurements{{state="{state}"}} 0\.0$', text, re.M)
    assert re.search(r"^tpcbench_campaign_estimate_seconds \d+\.\d+$", text, re.M)


def test_a_slow_campaign_misses_what_it_cannot_begin_before_the_next_slot(
    tmp_path: Path, monkeypatch
) -> None:
    # 30 measurements of 4 min, the whole mesh anyway (cycle_fit off), in a 10 min cycle
    clock = Clock()
    run = service(tmp_path, monkeypatch, clock, timedelta(minutes=4), cycle_fit="off")
    clock.now = START + timedelta(minutes=1)  # 12:00 was the slot; 12:10 the deadline
    result = run.tick(threading.Event())
    assert result is not None
    journal = run._journal()
    # begun at 12:00, 12:04, 12:08 (ends 12:12: late); the other 27 never began
    assert (journal["planned"], journal["done"], journal["late"]) == (30, 3, 1)
    assert journal["missed"] == 27 and journal["cycle_fit"]["mode"] == "over"
    assert len(result.measurements) == 3
    # it ended at 12:12, after the 12:10 slot: that slot's campaign is due at once
    assert run.schedule.next_at == clock.now == START + timedelta(minutes=13)


def test_a_campaign_run_now_has_no_cycle(tmp_path: Path, monkeypatch) -> None:
    run = service(tmp_path, monkeypatch, Clock(), timedelta(seconds=60))
    assert run.cycle_settings("manual", START) == {}
    scheduled = run.cycle_settings("schedule", START)
    assert scheduled["cycle"] == 600.0 and scheduled["cycle_fit"] == "rotate"
    assert scheduled["deadline"] == datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

"""A campaign's counters against its deadline, with a fake clock: planned, done, failed,
missed (not started before the deadline) and late (ended after it); a rotation part per
cycle across Campaign objects (restarts), the durations learnt for the next estimate."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from orchestrator.campaign.estimate import DurationHistory
from orchestrator.campaign.journal import campaign_payload
from orchestrator.campaign.run import Campaign
from orchestrator.campaign.settings import CampaignSettings
from orchestrator.endpoints import Endpoint
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.transfers.record import TransferRecord
from tests.support.campaign_doubles import CollectingReporter, instant_measurement

START = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
SMALL = CampaignSettings(protocols=("https",), streams=(1,), transfers=1, file_size=1024)


class Nodes:
    def __init__(self, n: int) -> None:
        self.nodes = [Endpoint(name=f"n{i}", address="127.0.0.1") for i in range(n)]

    def discover(self) -> list[Endpoint]:
        return list(self.nodes)


class FakeClock:
    """Each measurement takes `step` of fake time; with `fail_first` the first one fails."""

    def __init__(self, step: timedelta, fail_first: bool = False) -> None:
        self.now, self.step, self.fail_first = START, step, fail_first

    def __call__(self) -> datetime:
        return self.now

    def measure(self, request: MeasurementRequest, **options: Any):
        self.now += self.step
        record = instant_measurement(request, **options)
        ok, self.fail_first = not self.fail_first, False
        when = datetime.now(UTC)
        record.transfers = [
            TransferRecord(
                0, "https", "a", "b", 0.0, 1.0, when, when, 1024, "success" if ok else "failure"
            )
        ]
        return record


async def no_rtt(src: Endpoint, dst: Endpoint, port: int) -> float:
    return 1.0


def run(settings: CampaignSettings, clock: FakeClock, home: Path, n: int = 3):
    reporter = CollectingReporter()
    campaign = Campaign(
        settings,
        discovery=Nodes(n),
        reporter=reporter,
        measure=clock.measure,
        rtt=no_rtt,
        home=home,
        clock=clock,
    )
    result = campaign.run()
    assert campaign.journal is not None
    return result, campaign.journal.data, reporter


def test_measurements_after_the_deadline_are_missed_and_those_ending_after_it_late(
    tmp_path: Path,
) -> None:
    clock = FakeClock(timedelta(minutes=10), fail_first=True)
    # 6 measurements of 10 min, one at a time; the next cycle starts after 25 min
    settings = CampaignSettings(
        **{**SMALL.__dict__, "deadline": START + timedelta(minutes=25), "cycle": 3600.0}
    )
    result, journal, reporter = run(settings, clock, tmp_path)
    counters = {k: journal[k] for k in ("planned", "done", "failed", "missed", "late")}
    # started at 0, 10 and 20 min (the third ends at 30: late); the other 3 never began
    assert counters == {"planned": 6, "done": 2, "failed": 1, "missed": 3, "late": 1}
    assert len(reporter.measurements) == 3  # missed ones are counted, not reported
    assert result.state == "finished"
    assert campaign_payload(journal)["missed"] == 3
    assert journal["cycle_fit"]["mode"] == "fits"


def test_without_a_deadline_nothing_is_missed_and_durations_are_learnt(tmp_path: Path) -> None:
    clock = FakeClock(timedelta(minutes=1))
    _, journal, _ = run(SMALL, clock, tmp_path)
    assert (journal["planned"], journal["done"], journal["missed"], journal["late"]) == (6, 6, 0, 0)
    assert journal["cycle_fit"]["cycle_seconds"] is None  # a campaign run by hand: no cycle
    history = json.loads((tmp_path / "durations.json").read_text())["durations"]
    assert history == {"https/1/x509/native/none": [60.0] * 6}  # by the campaign's clock
    (spec,) = SMALL.plan(["n0", "n1"])[:1]
    assert DurationHistory.load(tmp_path).estimate(spec) == 60.0


def test_scheduled_campaigns_rotate_over_cycles_and_restarts_continue(tmp_path: Path) -> None:
    # 6 nodes, 30 ordered pairs of 60 s (the default) one at a time: 30 min; cycle 10 min
    settings = CampaignSettings(**{**SMALL.__dict__, "cycle": 600.0})
    measured: list[Counter] = []
    parts = []
    for _ in range(4):  # a new Campaign each cycle, as after a restart
        clock = FakeClock(timedelta(seconds=60))  # as estimated: the same k every cycle
        _, journal, reporter = run(settings, clock, tmp_path, n=6)
        fit = journal["cycle_fit"]
        parts.append((fit["part"], fit["k"]))
        measured.append(Counter((m["src"], m["dst"]) for m in reporter.measurements))
        assert journal["planned"] == journal["done"] == len(reporter.measurements)
    assert parts == [(1, 3), (2, 3), (3, 3), (1, 3)]  # k = ceil(30 min / 10 min)
    first_round = measured[0] + measured[1] + measured[2]
    assert len(first_round) == 30 and set(first_round.values()) == {1}  # each pair once
    assert "rotation of 3 cycles" in fit["message"]

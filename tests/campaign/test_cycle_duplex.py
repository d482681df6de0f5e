"""The full-duplex plan (setting full_duplex, off by default): a node sends in at most one
measurement and receives in at most one at a time; its bound is up to half the
node-exclusive one, and its schedule reaches it."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from orchestrator.campaign.duplex import DuplexScheduler, duplex_bound
from orchestrator.campaign.estimate import lower_bound
from orchestrator.campaign.planner import plan_measurements, simulate
from orchestrator.campaign.run import Campaign
from orchestrator.campaign.settings import CampaignSettings, load_settings
from orchestrator.endpoints import Endpoint
from tests.support.campaign_doubles import CollectingReporter, instant_measurement


def mesh(n: int) -> list:
    names = [f"n{i:02d}" for i in range(n)]
    return plan_measurements(names, {"protocol": ("https", "gridftp"), "streams": (8,)})


@pytest.mark.parametrize(("n", "p"), [(5, 5), (8, 4), (10, 10), (11, 3)])
def test_no_node_sends_or_receives_twice_at_once(n: int, p: int) -> None:
    specs = mesh(n)
    rng = random.Random(n * 100 + p)
    durations = {spec: rng.uniform(10, 90) for spec in specs}
    runs = simulate(specs, p, durations.__getitem__, scheduler_class=DuplexScheduler)
    assert Counter(r.spec for r in runs) == Counter(specs)  # each once
    events = sorted({r.start for r in runs})
    for t in events:
        now = [r for r in runs if r.start <= t < r.end]
        assert len(now) <= p
        senders = [r.spec.src for r in now]
        receivers = [r.spec.dst for r in now]
        assert len(senders) == len(set(senders)) and len(receivers) == len(set(receivers))
    both = any(  # the point of it: some node sends and receives at the same time
        {r.spec.src for r in runs if r.start <= t < r.end}
        & {r.spec.dst for r in runs if r.start <= t < r.end}
        for t in events
    )
    assert both or p == 1


def test_the_duplex_plan_takes_about_half_the_node_exclusive_one() -> None:
    specs = mesh(10)
    equal = {spec: 60.0 for spec in specs}.__getitem__
    exclusive = max(r.end for r in simulate(specs, 10, equal))
    duplex = max(r.end for r in simulate(specs, 10, equal, scheduler_class=DuplexScheduler))
    assert duplex_bound(specs, 10, equal) == lower_bound(specs, 10, equal) / 2 == 18 * 60.0
    assert duplex == duplex_bound(specs, 10, equal)  # shift rounds: optimal when equal
    assert duplex <= 0.6 * exclusive


def test_full_duplex_is_off_by_default_and_a_setting() -> None:
    assert load_settings({}, env={}).full_duplex is False
    assert load_settings({}, env={"TPCBENCH_FULL_DUPLEX": "1"}).full_duplex is True
    assert CampaignSettings().full_duplex is False


def test_a_full_duplex_campaign_measures_every_pair(tmp_path) -> None:
    class Nodes:
        def discover(self) -> list[Endpoint]:
            return [Endpoint(name=f"n{i}", address="127.0.0.1") for i in range(4)]

    async def rtt(src: Endpoint, dst: Endpoint, port: int) -> float:
        return 1.0

    settings = CampaignSettings(
        protocols=("https",), streams=(1,), file_size=1024, max_parallel_pairs=4, full_duplex=True
    )
    reporter = CollectingReporter()
    result = Campaign(
        settings,
        discovery=Nodes(),
        reporter=reporter,
        measure=instant_measurement,
        rtt=rtt,
        home=tmp_path,
    ).run()
    assert result.state == "finished" and len(reporter.measurements) == 12
    assert len({(m["src"], m["dst"]) for m in reporter.measurements}) == 12

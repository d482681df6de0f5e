"""Campaigns that fit their cycle: the duration estimate, the rotation over k cycles (k
minimal against the planner's bound, continued across restarts) and the shortened plan."""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.campaign.cycle_times import cycle_seconds, next_firing
from orchestrator.campaign.estimate import (
    DurationHistory,
    estimate_campaign,
    kind_of,
    lower_bound,
)
from orchestrator.campaign.planner import plan_measurements
from orchestrator.campaign.rotation import (
    directed_rounds,
    fit_cycle,
    plan_rotation,
    rotation_path,
)

NOON = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def names(n: int) -> list[str]:
    return [f"node-{i:03d}" for i in range(n)]


def mesh(n: int, streams: tuple[int, ...] = (8,)) -> list:
    return plan_measurements(names(n), {"protocol": ("https",), "streams": streams})


def test_history_gives_the_median_of_recent_durations_and_a_default_without_any(
    tmp_path: Path,
) -> None:
    a, b = mesh(2, streams=(8, 1))[:2]
    history = DurationHistory.load(tmp_path)
    assert history.estimate(a) == 60.0 and not history.known(a)
    for seconds in (10, 30, 20, 500):
        history.record(a, seconds)
    history.save()
    again = DurationHistory.load(tmp_path)
    assert again.estimate(a) == 25.0  # median of 10, 20, 30, 500
    assert again.estimate(b) == 60.0 and kind_of(a) != kind_of(b)
    assert kind_of(a) == "https/8/x509/native/none"
    for seconds in range(100):
        again.record(a, seconds)
    assert len(again.durations[kind_of(a)]) == 20  # only the recent ones


def test_an_unreadable_history_starts_afresh(tmp_path: Path) -> None:
    (tmp_path / "durations.json").write_text("{not json")
    assert DurationHistory.load(tmp_path).durations == {}


def test_the_estimate_says_the_bound_and_the_schedule(tmp_path: Path) -> None:
    specs = mesh(4)  # 12 ordered pairs; each node is in 6 of them
    history = DurationHistory(tmp_path / "d.json")
    one_by_one = estimate_campaign(specs, 1, history)
    assert one_by_one.bound == one_by_one.makespan == 12 * 60.0
    paired = estimate_campaign(specs, 2, history)
    assert paired.busiest_node == 6 * 60.0 and paired.bound == 6 * 60.0
    assert paired.makespan == 6 * 60.0  # 6 rounds of 2 node-disjoint pairs: optimal
    assert "12 measurements" in paired.describe() and "default 60 s" in paired.describe()


def test_the_cycle_is_the_gap_between_the_next_two_firings() -> None:
    assert cycle_seconds("0 0,12 * * *", NOON) == 12 * 3600
    assert cycle_seconds("*/30 * * * *", NOON) == 1800
    assert next_firing("0 0,12 * * *", NOON) == datetime(2026, 11, 26, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("n", [5, 6])
def test_directed_rounds_use_every_node_at_most_once_per_round(n: int) -> None:
    rounds, total = directed_rounds(names(n))
    assert len(rounds) == n * (n - 1)
    assert total == (2 * (n - 1) if n % 2 == 0 else 2 * n)
    for r in range(total):
        pairs = [p for p, pr in rounds.items() if pr == r]
        nodes = [node for p in pairs for node in p]
        assert len(nodes) == len(set(nodes))


def test_200_nodes_fit_a_two_hour_cycle_in_the_fewest_cycles(tmp_path: Path) -> None:
    specs = mesh(200)  # 39,800 ordered pairs, 60 s each (no history)
    history = DurationHistory(tmp_path / "d.json")
    cycle = cycle_seconds("0 */2 * * *", NOON)
    bound = lower_bound(specs, 100, history.estimate)  # the busiest node: 398 x 60 s
    assert bound == 398 * 60.0
    fit = fit_cycle(specs, max_parallel=100, history=history, cycle=cycle, home=tmp_path)
    assert fit.mode == "rotate"
    assert fit.k == fit.k_min == math.ceil(bound / cycle) == 4  # k - 1 cannot fit
    rotation = plan_rotation(specs, 100, history, cycle)
    assert rotation.fits and rotation.k == 4
    assert Counter(s for part in rotation.parts for s in part) == Counter(specs)  # each once
    for part, estimated in zip(rotation.parts, rotation.estimates, strict=True):
        assert estimated.measurements == len(part)
        assert estimated.simulated and estimated.makespan <= cycle
        assert estimated.makespan <= 1.10 * estimated.bound
    assert fit.specs == rotation.parts[0] and "part 1/4" in fit.message


def test_heterogeneous_durations_fill_each_cycle_up_to_its_busiest_node(tmp_path: Path) -> None:
    specs = mesh(40)
    slow = {"node-003", "node-017"}  # their measurements take 5 times as long
    history = DurationHistory(tmp_path / "d.json")
    history.estimate = lambda s: 300.0 if {s.src, s.dst} & slow else 60.0  # type: ignore[method-assign]
    cycle = 3 * 3600.0
    rotation = plan_rotation(specs, 20, history, cycle)
    bound = lower_bound(specs, 20, history.estimate)  # a slow node: 78 x 300 s = 6.5 h
    assert bound == 78 * 300.0 and rotation.k_min == 3
    assert rotation.fits and rotation.k == 3
    assert Counter(s for part in rotation.parts for s in part) == Counter(specs)


def test_restarts_continue_the_rotation(tmp_path: Path) -> None:
    specs = mesh(12)  # each node in 22 measurements of 60 s: 22 min
    history = DurationHistory(tmp_path / "d.json")
    seen = []
    for _ in range(4):  # a new process each cycle: only rotation.json carries the state
        fit = fit_cycle(
            specs, max_parallel=6, history=history, cycle=600.0, home=tmp_path, advance=True
        )
        seen.append((fit.part, fit.specs))
    k = fit.k
    assert k == 3  # ceil(22 / 10)
    assert [part for part, _ in seen] == [0, 1, 2, 0]
    assert Counter(s for _, part in seen[:k] for s in part) == Counter(specs)
    assert seen[3][1] == seen[0][1]  # the next round of the rotation starts over
    state = json.loads(rotation_path(tmp_path).read_text())
    assert state["k"] == 3 and state["next"] == 1


def test_a_plan_looks_without_moving_the_rotation(tmp_path: Path) -> None:
    specs = mesh(12)
    history = DurationHistory(tmp_path / "d.json")
    for _ in range(2):
        fit = fit_cycle(
            specs, max_parallel=6, history=history, cycle=600.0, home=tmp_path, advance=False
        )
        assert fit.part == 0
    assert not rotation_path(tmp_path).exists()


def test_a_new_node_set_starts_a_new_rotation(tmp_path: Path) -> None:
    history = DurationHistory(tmp_path / "d.json")
    fit_cycle(mesh(12), max_parallel=6, history=history, cycle=600.0, home=tmp_path)
    fit = fit_cycle(mesh(13), max_parallel=6, history=history, cycle=600.0, home=tmp_path)
    assert fit.part == 0 and "new plan" in fit.message


def test_a_mesh_that_fits_runs_whole(tmp_path: Path) -> None:
    specs = mesh(4)
    history = DurationHistory(tmp_path / "d.json")
    fit = fit_cycle(specs, max_parallel=1, history=history, cycle=43200.0, home=tmp_path)
    assert fit.mode == "fits" and fit.specs == specs and fit.k == 1
    assert not rotation_path(tmp_path).exists()
    unscheduled = fit_cycle(specs, max_parallel=1, history=history, cycle=None)
    assert unscheduled.specs == specs and "no cycle" in unscheduled.message


def test_shorten_keeps_the_first_stream_setting_and_says_so(tmp_path: Path) -> None:
    specs = mesh(6, streams=(8, 1))  # 60 measurements of 60 s, one at a time: 1 h
    history = DurationHistory(tmp_path / "d.json")
    fit = fit_cycle(
        specs, max_parallel=1, history=history, cycle=1800.0, mode="shorten", home=tmp_path
    )
    assert fit.mode == "shorten" and fit.dropped == {"streams": [1]}
    assert {s.streams for s in fit.specs} == {8} and len(fit.specs) == 30
    assert "left out streams 1" in fit.message
    assert fit.to_json()["cycle_estimate"]["makespan"] == 1800.0


def test_shorten_rotates_when_one_check_per_pair_is_still_too_long(tmp_path: Path) -> None:
    specs = mesh(6, streams=(8, 1))
    history = DurationHistory(tmp_path / "d.json")
    fit = fit_cycle(
        specs, max_parallel=1, history=history, cycle=900.0, mode="shorten", home=tmp_path
    )
    assert fit.mode == "rotate" and fit.dropped == {"streams": [1]} and fit.k == 2
    assert "left out streams 1" in fit.message


def test_off_measures_everything_and_warns(tmp_path: Path, caplog) -> None:
    specs = mesh(6)
    history = DurationHistory(tmp_path / "d.json")
    fit = fit_cycle(specs, max_parallel=1, history=history, cycle=60.0, mode="off")
    assert fit.mode == "over" and fit.specs == specs
    assert "anyway" in caplog.text
    with pytest.raises(ValueError, match="not one of rotate, shorten, off"):
        fit_cycle(specs, max_parallel=1, history=history, cycle=60.0, mode="drop")

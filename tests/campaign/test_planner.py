"""The planner never puts a node in two concurrent measurements, runs each spec once, and
keeps at most P running — checked on the pure scheduler, in simulation and with asyncio
tasks."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.campaign.planner import (
    ListScheduler,
    MeasurementSpec,
    NodeDisjointTasks,
    plan_campaign,
    plan_measurements,
    simulate,
)


def names(n: int) -> list[str]:
    return [f"n{i}" for i in range(n)]


def test_plan_covers_every_ordered_pair_with_8_streams_before_1() -> None:
    specs = plan_campaign(["b", "a", "c"])
    assert len(specs) == 3 * 2 * 2 * 2
    assert len(set(specs)) == len(specs)
    assert all(s.src != s.dst for s in specs)
    ab = [s for s in specs if (s.src, s.dst) == ("a", "b")]
    assert [(s.protocol, s.streams) for s in ab] == [
        ("https", 8),
        ("https", 1),
        ("gridftp", 8),
        ("gridftp", 1),
    ]


def test_plan_accepts_endpoints() -> None:
    from orchestrator.endpoints import Endpoint

    specs = plan_campaign(
        [Endpoint("x", "127.0.0.2"), Endpoint("y", "127.0.0.3")], ("https",), (1,)
    )
    assert [(s.src, s.dst) for s in specs] == [("x", "y"), ("y", "x")]


def check_runs(runs, specs, p) -> None:
    assert Counter(r.spec for r in runs) == Counter(specs)  # every spec exactly once
    instants = sorted({r.start for r in runs})
    for t in instants:
        active = [r for r in runs if r.start <= t < r.end]
        assert len(active) <= p
        busy = Counter(node for r in active for node in r.spec.nodes)
        assert max(busy.values(), default=0) <= 1, f"node in two measurements at {t}"


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=9),
    p=st.integers(min_value=1, max_value=6),
    data=st.data(),
)
def test_simulated_schedule_is_contention_free(n: int, p: int, data: st.DataObject) -> None:
    specs = plan_campaign(names(n), ("https", "gridftp"), (8, 1))
    durations = data.draw(
        st.lists(st.integers(min_value=1, max_value=50), min_size=len(specs), max_size=len(specs))
    )
    truth = dict(zip(specs, map(float, durations), strict=True))
    runs = simulate(specs, p, truth.__getitem__)
    check_runs(runs, specs, p)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=2, max_value=7), data=st.data())
def test_p1_is_strictly_sequential(n: int, data: st.DataObject) -> None:
    specs = plan_campaign(names(n), ("https",), (8, 1))
    durations = data.draw(st.lists(st.integers(1, 9), min_size=len(specs), max_size=len(specs)))
    truth = dict(zip(specs, map(float, durations), strict=True))
    runs = sorted(simulate(specs, 1, truth.__getitem__), key=lambda r: r.start)
    for before, after in itertools.pairwise(runs):
        assert after.start >= before.end
    assert runs[-1].end == sum(durations)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(min_value=2, max_value=12))
def test_equal_durations_reach_the_round_robin_bound(n: int) -> None:
    specs = plan_campaign(names(n), ("https",), (1,))
    runs = simulate(specs, max(1, n // 2), lambda s: 1.0)
    rounds = 2 * (n - 1) if n % 2 == 0 else 2 * n
    assert max(r.end for r in runs) == rounds


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=6),
    p=st.integers(min_value=1, max_value=4),
    finish_order=st.randoms(use_true_random=False),
)
def test_pure_scheduler_invariants_under_any_finish_order(n, p, finish_order) -> None:
    specs = plan_campaign(names(n), ("https", "gridftp"), (1,))
    scheduler = ListScheduler(specs, p)
    started: list[MeasurementSpec] = []
    while not scheduler.done:
        started += scheduler.start_ready()
        running = list(scheduler.running)
        assert 1 <= len(running) <= p
        busy = Counter(node for spec in running for node in spec.nodes)
        assert max(busy.values()) == 1
        scheduler.finish(finish_order.choice(running))
    assert Counter(started) == Counter(specs)


def test_scheduler_rejects_duplicates_and_self_pairs() -> None:
    spec = MeasurementSpec("a", "b", "https", 1)
    with pytest.raises(ValueError):
        ListScheduler([spec, spec], 1)
    with pytest.raises(ValueError):
        ListScheduler([MeasurementSpec("a", "a", "https", 1)], 1)


def test_drop_pending_removes_a_dead_nodes_work() -> None:
    specs = plan_campaign(names(4), ("https",), (1,))
    scheduler = ListScheduler(specs, 2)
    first = scheduler.start_ready()
    dropped = scheduler.drop_pending(lambda s: "n3" in s.nodes)
    assert all("n3" in s.nodes for s in dropped)
    assert len(dropped) == 6 - sum("n3" in s.nodes for s in first)
    ran = list(first)
    for spec in first:
        scheduler.finish(spec)
    while not scheduler.done:
        batch = scheduler.start_ready()
        ran += batch
        for spec in batch:
            scheduler.finish(spec)
    assert Counter(ran) + Counter(dropped) == Counter(specs)


def test_plan_measurements_varies_every_dimension_in_order() -> None:
    specs = plan_measurements(["b", "a"], {"protocol": ("root", "https"), "streams": (4, 2, 1)})
    assert specs == plan_campaign(["a", "b"], ("root", "https"), (4, 2, 1))
    ab = [(s.protocol, s.streams) for s in specs if (s.src, s.dst) == ("a", "b")]
    assert ab == [(p, n) for p in ("root", "https") for n in (4, 2, 1)]
    assert specs[0].key == "a->b/root/4"


@settings(max_examples=15, deadline=None)
@given(n=st.integers(min_value=2, max_value=6), p=st.integers(min_value=1, max_value=4))
def test_asyncio_tasks_never_overlap_a_node(n: int, p: int) -> None:
    specs = plan_campaign(names(n), ("https",), (8, 1))
    busy: Counter[str] = Counter()
    concurrent = [0, 0]  # now, max
    violations: list[str] = []

    async def run_one(spec: MeasurementSpec) -> str:
        for node in spec.nodes:
            busy[node] += 1
            if busy[node] > 1:
                violations.append(node)
        concurrent[0] += 1
        concurrent[1] = max(concurrent)
        for _ in range(3):  # let the other tasks interleave
            await asyncio.sleep(0)
        for node in spec.nodes:
            busy[node] -= 1
        concurrent[0] -= 1
        if spec.streams == 1 and spec.src == "n0":
            raise RuntimeError("a failed measurement is reported, not raised")
        return spec.key

    done: list[tuple[MeasurementSpec, BaseException | None]] = []
    results: dict[MeasurementSpec, str | None] = {}

    async def on_done(spec: MeasurementSpec, result: str | None, error: BaseException | None):
        done.append((spec, error))
        if error is None:
            results[spec] = result

    asyncio.run(NodeDisjointTasks(specs, p, run_one, on_done).run())
    assert violations == []
    assert concurrent[1] <= p
    assert Counter(s for s, _ in done) == Counter(specs)
    failed = {s for s, e in done if e is not None}
    assert failed == {s for s in specs if s.streams == 1 and s.src == "n0"}
    assert all(isinstance(e, RuntimeError) for s, e in done if s in failed)
    assert set(results) == set(specs) - failed
    assert all(results[s] == s.key for s in results)


async def ignore(spec: MeasurementSpec, result: object, error: BaseException | None) -> None:
    pass


def test_stop_prevents_new_starts() -> None:
    specs = plan_campaign(names(3), ("https",), (1,))
    stop = threading.Event()
    ran: list[MeasurementSpec] = []

    async def run_one(spec: MeasurementSpec) -> None:
        ran.append(spec)
        stop.set()

    asyncio.run(NodeDisjointTasks(specs, 1, run_one, ignore).run(stop))
    assert len(ran) == 1


def test_skipped_specs_end_without_running_and_free_their_nodes() -> None:
    specs = plan_campaign(names(3), ("https",), (1,))
    ran: list[MeasurementSpec] = []
    ended: list[tuple[MeasurementSpec, object, BaseException | None]] = []

    async def skip(spec: MeasurementSpec) -> bool:
        return "n2" in spec.nodes

    async def run_one(spec: MeasurementSpec) -> str:
        ran.append(spec)
        return "ran"

    async def on_done(spec: MeasurementSpec, result: object, error: BaseException | None):
        ended.append((spec, result, error))

    asyncio.run(NodeDisjointTasks(specs, 1, run_one, on_done, skip=skip).run())
    assert sorted(ran, key=lambda s: s.key) == [s for s in specs if "n2" not in s.nodes]
    assert Counter(s for s, _, _ in ended) == Counter(specs)
    assert all((r, e) == (None, None) for s, r, e in ended if "n2" in s.nodes)


def test_cancel_running_cancels_the_running_specs_and_starts_no_more() -> None:
    specs = plan_campaign(names(4), ("https",), (1,))
    stop = threading.Event()
    ended: list[tuple[MeasurementSpec, BaseException | None]] = []
    started: list[MeasurementSpec] = []
    cancelled: list[MeasurementSpec] = []

    async def run_one(spec: MeasurementSpec) -> None:
        started.append(spec)
        try:
            await asyncio.Event().wait()  # never ends by itself
        except asyncio.CancelledError:
            cancelled.append(spec)
            raise

    async def on_done(spec: MeasurementSpec, result: object, error: BaseException | None):
        ended.append((spec, error))

    async def main() -> None:
        tasks = NodeDisjointTasks(specs, 2, run_one, on_done)
        running = asyncio.create_task(tasks.run(stop))
        while len(started) < 2:
            await asyncio.sleep(0)
        stop.set()
        tasks.cancel_running()
        await running

    asyncio.run(main())
    assert len(started) == 2 and not set(started[0].nodes) & set(started[1].nodes)
    assert sorted(cancelled, key=str) == sorted(started, key=str)
    assert [s for s, _ in ended] and {s for s, _ in ended} == set(started)
    assert all(isinstance(e, asyncio.CancelledError) for _, e in ended)

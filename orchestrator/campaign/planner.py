"""Contention-free campaign planning: which measurements, and in what order they may run.

A node is never in two measurements at once (the NIC under test must not be shared; this
is pScheduler's "exclusive" scheduling class). `plan_measurements` lists the measurements;
`ListScheduler` is the pure decision logic (no clocks, no tasks) deciding which pending
measurement starts when; `NodeDisjointTasks` drives it with asyncio tasks and a real
`run_one`.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from orchestrator.measurement.spec import MeasurementSpec

DEFAULT_PROTOCOLS: tuple[str, ...] = ("https", "gridftp")
DEFAULT_STREAMS: tuple[int, ...] = (8, 1)


class _Named(Protocol):
    name: str


def _name(node: str | _Named) -> str:
    return node if isinstance(node, str) else node.name


def plan_measurements(
    nodes: Iterable[str | _Named], dimensions: Mapping[str, Sequence[Any]]
) -> list[MeasurementSpec]:
    """Every ordered pair src != dst x every combination of `dimensions` (a MeasurementSpec
    field: its values); per pair, the first dimension varies slowest and each one's values
    keep their given order."""
    names = sorted({_name(n) for n in nodes})
    combinations = list(itertools.product(*dimensions.values()))
    return [
        MeasurementSpec(src, dst, **dict(zip(dimensions, values, strict=True)))
        for src in names
        for dst in names
        if src != dst
        for values in combinations
    ]


def plan_campaign(
    nodes: Iterable[str | _Named],
    protocols: Sequence[str] = DEFAULT_PROTOCOLS,
    streams: Sequence[int] = DEFAULT_STREAMS,
) -> list[MeasurementSpec]:
    """Every ordered pair src != dst x protocol x streams; per pair, streams in the given order
    (8 then 1, as the paper ran them)."""
    return plan_measurements(nodes, {"protocol": protocols, "streams": streams})


Estimate = Callable[[MeasurementSpec], float]


def unit_estimate(spec: MeasurementSpec) -> float:
    return 1.0


def _circle_rounds(names: Sequence[str]) -> dict[frozenset[str], int]:
    """Round number of each unordered pair in a round-robin tournament (circle method).

    With equal durations, running pairs in round order gives N-1 (N even) or N (N odd)
    rounds of node-disjoint pairs — the optimum — so the round is the tie-breaker.
    """
    players: list[str | None] = list(names)
    if len(players) % 2:
        players.append(None)  # the bye
    n = len(players)
    rounds: dict[frozenset[str], int] = {}
    for r in range(n - 1):
        for i in range(n // 2):
            a, b = players[i], players[n - 1 - i]
            if a is not None and b is not None:
                rounds[frozenset((a, b))] = r
        players = [players[0], players[-1], *players[1:-1]]  # rotate all but the first
    return rounds


class ListScheduler:
    """Greedy list scheduling of measurements on nodes, at most `max_parallel` at a time.

    Pure state machine: call `start_ready()` to get the specs to launch now, `finish(spec)`
    when one ends, repeat until `done`. Priority: the free node with the most remaining
    (estimated) work goes first, paired with the free partner that has the most remaining
    work; ties follow the circle-method round, which makes equal durations optimal. All
    measurements of one unordered pair share a queue, so two nodes that finish together can
    continue with each other at once.
    """

    def __init__(
        self,
        specs: Iterable[MeasurementSpec],
        max_parallel: int = 1,
        estimate: Estimate = unit_estimate,
    ) -> None:
        if max_parallel < 1:
            raise ValueError("max_parallel must be >= 1")
        self.max_parallel = max_parallel
        self._estimate = estimate
        self._queues: dict[frozenset[str], deque[MeasurementSpec]] = {}
        self._load: dict[str, float] = {}
        self._partners: dict[str, set[str]] = {}
        self._seen: set[MeasurementSpec] = set()
        for spec in specs:
            if spec.src == spec.dst:
                raise ValueError(f"{spec.key}: source and destination are the same node")
            if spec in self._seen:
                raise ValueError(f"{spec.key} is planned twice")
            self._seen.add(spec)
            self._queues.setdefault(spec.nodes, deque()).append(spec)
            cost = estimate(spec)
            for node in spec.nodes:
                self._load[node] = self._load.get(node, 0.0) + cost
            self._partners.setdefault(spec.src, set()).add(spec.dst)
            self._partners.setdefault(spec.dst, set()).add(spec.src)
        self._round = _circle_rounds(sorted(self._load))
        self._busy: set[str] = set()
        self.running: set[MeasurementSpec] = set()
        self.pending_count = len(self._seen)

    @property
    def done(self) -> bool:
        return self.pending_count == 0 and not self.running

    def remaining_load(self, node: str) -> float:
        return self._load.get(node, 0.0)

    def _take(self, pair: frozenset[str]) -> MeasurementSpec:
        queue = self._queues[pair]
        spec = queue.popleft()
        if not queue:
            del self._queues[pair]
            a, b = tuple(pair)
            self._partners[a].discard(b)
            self._partners[b].discard(a)
        self.pending_count -= 1
        return spec

    def _best_pair(self) -> frozenset[str] | None:
        free = [n for n, ps in self._partners.items() if ps and n not in self._busy]
        free.sort(key=lambda n: (-self._load[n], n))
        for a in free:
            partners = [b for b in self._partners[a] if b not in self._busy]
            if partners:
                b = min(
                    partners,
                    key=lambda b: (self._round.get(frozenset((a, b)), 0), -self._load[b], b),
                )
                return frozenset((a, b))
        return None

    def start_ready(self) -> list[MeasurementSpec]:
        """The specs to start now; they are marked running."""
        started: list[MeasurementSpec] = []
        while len(self.running) < self.max_parallel and self.pending_count:
            pair = self._best_pair()
            if pair is None:
                break
            spec = self._take(pair)
            self._busy |= pair
            self.running.add(spec)
            started.append(spec)
        return started

    def finish(self, spec: MeasurementSpec) -> None:
        if spec not in self.running:
            raise ValueError(f"{spec.key} is not running")
        self.running.remove(spec)
        self._busy -= spec.nodes
        cost = self._estimate(spec)
        for node in spec.nodes:
            self._load[node] -= cost

    def drop_pending(self, predicate: Callable[[MeasurementSpec], bool]) -> list[MeasurementSpec]:
        """Remove (and return) pending specs matching `predicate`, e.g. those of a dead node."""
        dropped: list[MeasurementSpec] = []
        for pair in list(self._queues):
            keep = deque()
            for spec in self._queues[pair]:
                (dropped if predicate(spec) else keep).append(spec)
            if keep:
                self._queues[pair] = keep
            else:
                del self._queues[pair]
                a, b = tuple(pair)
                self._partners[a].discard(b)
                self._partners[b].discard(a)
        for spec in dropped:
            self.pending_count -= 1
            for node in spec.nodes:
                self._load[node] -= self._estimate(spec)
        return dropped


@dataclass(frozen=True)
class SimulatedRun:
    spec: MeasurementSpec
    start: float
    end: float


def simulate(
    specs: Sequence[MeasurementSpec],
    max_parallel: int,
    duration: Callable[[MeasurementSpec], float],
    estimate: Estimate | None = None,
    scheduler_class: Callable[..., Any] | None = None,
) -> list[SimulatedRun]:
    """Discrete-event simulation of `ListScheduler` (or `scheduler_class`, e.g. the
    full-duplex one: duplex.py) without sleeping: when does each spec run, if it takes
    `duration(spec)`? The scheduler sees only `estimate` (default: the truth)."""
    import heapq

    scheduler = (scheduler_class or ListScheduler)(specs, max_parallel, estimate or duration)
    now = 0.0
    events: list[tuple[float, int, MeasurementSpec]] = []
    runs: list[SimulatedRun] = []
    seq = 0
    while not scheduler.done:
        for spec in scheduler.start_ready():
            end = now + duration(spec)
            runs.append(SimulatedRun(spec, now, end))
            heapq.heappush(events, (end, seq, spec))
            seq += 1
        if not events:
            raise RuntimeError("scheduler stalled with pending measurements")
        now, _, spec = heapq.heappop(events)
        scheduler.finish(spec)
        while events and events[0][0] == now:  # everything ending at the same instant
            scheduler.finish(heapq.heappop(events)[2])
    return runs


T = TypeVar("T")


class _Flag(Protocol):
    def is_set(self) -> bool: ...


class NodeDisjointTasks(Generic[T]):
    """Runs every spec with `run_one` as an asyncio task, never a node in two at once, at most
    P at a time (P = 1: strictly one after another, in the scheduler's order).

    `on_done(spec, result, error)` is awaited as each spec ends, one at a time: an exception
    from `run_one` is passed to it, not raised; a cancelled spec comes with its
    `CancelledError`. `skip(spec)`, awaited just before a start, drops a spec without running
    it (it is passed to `on_done` with result None and no error).
    """

    def __init__(
        self,
        specs: Sequence[MeasurementSpec],
        max_parallel_pairs: int,
        run_one: Callable[[MeasurementSpec], Awaitable[T]],
        on_done: Callable[[MeasurementSpec, T | None, BaseException | None], Awaitable[None]],
        *,
        skip: Callable[[MeasurementSpec], Awaitable[bool]] | None = None,
        estimate: Estimate = unit_estimate,
        scheduler_class: Callable[..., Any] | None = None,  # e.g. duplex.DuplexScheduler
    ) -> None:
        scheduler = scheduler_class or ListScheduler
        self._scheduler = scheduler(specs, max_parallel_pairs, estimate)
        self._run_one = run_one
        self._on_done = on_done
        self._skip = skip
        self._running: dict[asyncio.Task[T], MeasurementSpec] = {}

    async def run(self, stop: _Flag | None = None) -> None:
        """Until every spec has ended; once `stop` is set no new spec starts (the running ones
        still end, or are cancelled by `cancel_running`)."""

        def stopped() -> bool:
            return stop is not None and stop.is_set()

        while True:
            # a skipped spec frees its nodes at once: ask the scheduler again
            while not stopped() and (ready := self._scheduler.start_ready()):
                for spec in ready:
                    if self._skip is not None and await self._skip(spec):
                        await self._end(spec, None, None)
                    else:
                        self._running[asyncio.create_task(self._run_one(spec))] = spec
            if not self._running:
                return
            finished, _ = await asyncio.wait(self._running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                spec = self._running.pop(task)
                if task.cancelled():
                    await self._end(spec, None, asyncio.CancelledError())
                elif (error := task.exception()) is not None:
                    await self._end(spec, None, error)
                else:
                    await self._end(spec, task.result(), None)

    def cancel_running(self) -> None:
        """Cancel the specs running now (e.g. a stop's grace period is over)."""
        for task in self._running:
            task.cancel()

    async def _end(
        self, spec: MeasurementSpec, result: T | None, error: BaseException | None
    ) -> None:
        self._scheduler.finish(spec)
        await self._on_done(spec, result, error)

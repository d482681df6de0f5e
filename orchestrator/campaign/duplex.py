"""The full-duplex plan (off by default: the `full_duplex` setting): a node may send in one
measurement while it receives in another, never two sends or two receives at once.

A NIC's two directions are separate (100 GbE is full duplex), so a node's sending and
receiving work can overlap: the bound drops from the busiest node's total work to its
larger direction, up to half. Whether a node's throughput holds while it does both is a
measurement (`bench/planner.py` prints the plan; the lab decides), which is why it is not
the default.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from orchestrator.campaign.planner import Estimate, unit_estimate
from orchestrator.measurement.spec import MeasurementSpec

Pair = tuple[str, str]


def duplex_bound(specs: Sequence[MeasurementSpec], max_parallel: int, estimate: Estimate) -> float:
    """No full-duplex schedule is shorter: a node's larger direction, or all work over P."""
    if not specs:
        return 0.0
    sends: dict[str, float] = {}
    receives: dict[str, float] = {}
    for spec in specs:
        cost = estimate(spec)
        sends[spec.src] = sends.get(spec.src, 0.0) + cost
        receives[spec.dst] = receives.get(spec.dst, 0.0) + cost
    busiest = max(max(sends.values()), max(receives.values()))
    return max(busiest, sum(estimate(spec) for spec in specs) / max_parallel)


class DuplexScheduler:
    """`ListScheduler`'s interface and rules, with a node's two directions scheduled apart:
    the free sender with the most sending left goes first, to the free receiver it still
    has to measure (its shift round first, then the most receiving left)."""

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
        self._queues: dict[Pair, deque[MeasurementSpec]] = {}
        self._send: dict[str, float] = {}
        self._receive: dict[str, float] = {}
        self._targets: dict[str, set[str]] = {}
        seen: set[MeasurementSpec] = set()
        for spec in specs:
            if spec.src == spec.dst:
                raise ValueError(f"{spec.key}: source and destination are the same node")
            if spec in seen:
                raise ValueError(f"{spec.key} is planned twice")
            seen.add(spec)
            self._queues.setdefault((spec.src, spec.dst), deque()).append(spec)
            cost = estimate(spec)
            self._send[spec.src] = self._send.get(spec.src, 0.0) + cost
            self._receive[spec.dst] = self._receive.get(spec.dst, 0.0) + cost
            self._targets.setdefault(spec.src, set()).add(spec.dst)
        # Rounds of shifts: in round s every node i sends to node i + s (mod N), so each
        # node sends once and receives once; N - 1 rounds hold every ordered pair.
        names = sorted(set(self._send) | set(self._receive))
        index = {name: i for i, name in enumerate(names)}
        self._round = {
            (a, b): (index[b] - index[a]) % len(names) for a in names for b in names if a != b
        }
        self._sending: set[str] = set()
        self._receiving: set[str] = set()
        self.running: set[MeasurementSpec] = set()
        self.pending_count = len(seen)

    @property
    def done(self) -> bool:
        return self.pending_count == 0 and not self.running

    def remaining_load(self, node: str) -> float:
        return max(self._send.get(node, 0.0), self._receive.get(node, 0.0))

    def _best_pair(self) -> Pair | None:
        free = [n for n, ts in self._targets.items() if ts and n not in self._sending]
        free.sort(key=lambda n: (-self._send[n], n))
        for src in free:
            receivers = [d for d in self._targets[src] if d not in self._receiving]
            if receivers:
                dst = min(
                    receivers,
                    key=lambda d: (self._round.get((src, d), 0), -self._receive[d], d),
                )
                return (src, dst)
        return None

    def _take(self, pair: Pair) -> MeasurementSpec:
        queue = self._queues[pair]
        spec = queue.popleft()
        if not queue:
            del self._queues[pair]
            self._targets[pair[0]].discard(pair[1])
        self.pending_count -= 1
        return spec

    def start_ready(self) -> list[MeasurementSpec]:
        started: list[MeasurementSpec] = []
        while len(self.running) < self.max_parallel and self.pending_count:
            pair = self._best_pair()
            if pair is None:
                break
            spec = self._take(pair)
            self._sending.add(spec.src)
            self._receiving.add(spec.dst)
            self.running.add(spec)
            started.append(spec)
        return started

    def _unload(self, spec: MeasurementSpec) -> None:
        cost = self._estimate(spec)
        self._send[spec.src] -= cost
        self._receive[spec.dst] -= cost

    def finish(self, spec: MeasurementSpec) -> None:
        if spec not in self.running:
            raise ValueError(f"{spec.key} is not running")
        self.running.remove(spec)
        self._sending.discard(spec.src)
        self._receiving.discard(spec.dst)
        self._unload(spec)

    def drop_pending(self, predicate: Callable[[MeasurementSpec], bool]) -> list[MeasurementSpec]:
        dropped: list[MeasurementSpec] = []
        for pair in list(self._queues):
            keep: deque[MeasurementSpec] = deque()
            for spec in self._queues[pair]:
                (dropped if predicate(spec) else keep).append(spec)
            if keep:
                self._queues[pair] = keep
            else:
                del self._queues[pair]
                self._targets[pair[0]].discard(pair[1])
        for spec in dropped:
            self.pending_count -= 1
            self._unload(spec)
        return dropped

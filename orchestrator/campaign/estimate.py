"""How long a campaign will take, said before it starts.

Each kind of measurement (protocol x streams x auth x client x checksum) has its own recent
durations, learned from the orchestrator's own finished measurements and kept in
$TPCBENCH_HOME/durations.json (written atomically); a kind never measured yet takes
`DEFAULT_SECONDS`. From those per-measurement estimates come the planner's bound (the busiest
node's total work, or all the work over the parallel pairs, whichever is larger: no schedule
can be shorter) and the schedule's makespan (`planner.simulate` of the same `ListScheduler`
the campaign runs).
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orchestrator.campaign.duplex import DuplexScheduler, duplex_bound
from orchestrator.campaign.planner import simulate
from orchestrator.measurement.spec import MeasurementSpec
from orchestrator.paths import tpcbench_home
from orchestrator.report.spool import write_json_atomically

log = logging.getLogger(__name__)

DEFAULT_SECONDS = 60.0  # a measurement never seen: the t = 60 s
KEEP = 20  # recent durations kept per kind
KIND_FIELDS = ("protocol", "streams", "auth", "client", "checksum")
SIMULATE_LIMIT = 40_000  # larger plans: the bound x PLANNER_SLACK (simulating takes seconds)
PLANNER_SLACK = 1.10  # bench/planner.py: the makespan stays within 10% of the bound


def kind_of(spec: MeasurementSpec) -> str:
    """The kind of a measurement, e.g. "https/8/x509/native/none"."""
    return "/".join(str(getattr(spec, name)) for name in KIND_FIELDS)


def durations_path(home: Path | None = None) -> Path:
    return (home or tpcbench_home()) / "durations.json"


class DurationHistory:
    """Recent durations (seconds) per kind of measurement; the median is the estimate."""

    def __init__(
        self, path: Path, durations: dict[str, list[float]] | None = None, default: float = 0.0
    ) -> None:
        self.path = path
        self.durations: dict[str, list[float]] = durations or {}
        self.default = default or DEFAULT_SECONDS

    @classmethod
    def load(cls, home: Path | None = None, default: float = 0.0) -> DurationHistory:
        path = durations_path(home)
        durations: dict[str, list[float]] = {}
        if path.is_file():
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                durations = {
                    str(k): [float(x) for x in v][-KEEP:] for k, v in raw["durations"].items()
                }
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                log.warning("unreadable duration history %s (%s); starting afresh", path, exc)
        return cls(path, durations, default)

    def record(self, spec: MeasurementSpec, seconds: float) -> None:
        recent = self.durations.setdefault(kind_of(spec), [])
        recent.append(round(float(seconds), 3))
        del recent[:-KEEP]

    def save(self) -> None:
        write_json_atomically(self.path, {"keep": KEEP, "durations": self.durations})

    def known(self, spec: MeasurementSpec) -> bool:
        return bool(self.durations.get(kind_of(spec)))

    def estimate(self, spec: MeasurementSpec) -> float:
        recent = self.durations.get(kind_of(spec))
        return float(statistics.median(recent)) if recent else self.default


def node_loads(
    specs: Sequence[MeasurementSpec], estimate: Callable[[MeasurementSpec], float]
) -> dict[str, float]:
    """Each node's total estimated work (a measurement occupies both its nodes)."""
    load: dict[str, float] = {}
    for spec in specs:
        cost = estimate(spec)
        for node in spec.nodes:
            load[node] = load.get(node, 0.0) + cost
    return load


def lower_bound(
    specs: Sequence[MeasurementSpec],
    max_parallel: int,
    estimate: Callable[[MeasurementSpec], float],
    full_duplex: bool = False,
) -> float:
    """No schedule is shorter: the busiest node's work, or all the work over P pairs (full
    duplex: the busiest node's larger direction, duplex.py)."""
    if full_duplex:
        return duplex_bound(specs, max_parallel, estimate)
    if not specs:
        return 0.0
    total = sum(estimate(spec) for spec in specs)
    return max(max(node_loads(specs, estimate).values()), total / max_parallel)


@dataclass(frozen=True)
class CampaignEstimate:
    """A campaign's duration before it starts (seconds)."""

    measurements: int
    bound: float  # the planner's lower bound
    busiest_node: float  # the busiest node's total work
    total_work: float  # every measurement one after another
    makespan: float  # the simulated schedule with these estimates
    max_parallel: int
    from_history: int  # measurements whose kind has recent durations
    default_seconds: float  # what a kind without history is assumed to take
    simulated: bool = True  # False: the makespan is the bound x PLANNER_SLACK
    full_duplex: bool = False  # a node may send and receive at once (duplex.py)

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 1) if isinstance(v, float) else v for k, v in asdict(self).items()}

    def describe(self) -> str:
        guessed = self.measurements - self.from_history
        source = (
            "all from recent durations"
            if not guessed
            else f"{guessed} at the default {self.default_seconds:g} s (no history yet)"
        )
        how = "scheduled" if self.simulated else f"(bound x {PLANNER_SLACK:g}, not simulated)"
        return (
            f"estimate: {self.measurements} measurements, {hours(self.makespan)} {how} "
            f"(bound {hours(self.bound)}: busiest node {hours(self.busiest_node)}, all work "
            f"{hours(self.total_work)} over {self.max_parallel} pair(s)); {source}"
        )


def hours(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.0f} s"


def estimate_campaign(
    specs: Sequence[MeasurementSpec],
    max_parallel: int,
    history: DurationHistory,
    *,
    schedule: bool = True,
    full_duplex: bool = False,
) -> CampaignEstimate:
    """The bound and the makespan of `specs` with `history`'s estimates: one pair at a time
    it is all the work; else the simulated schedule (`schedule` and at most SIMULATE_LIMIT
    measurements), or the bound x PLANNER_SLACK."""
    estimate = history.estimate
    bound = lower_bound(specs, max_parallel, estimate, full_duplex)
    loads = node_loads(specs, estimate)
    total = sum(estimate(spec) for spec in specs)
    simulated = max_parallel == 1 or (schedule and len(specs) <= SIMULATE_LIMIT)
    if not specs:
        span = 0.0
    elif max_parallel == 1:
        span = total  # strictly one after another
    elif simulated:
        scheduler = DuplexScheduler if full_duplex else None
        runs = simulate(list(specs), max_parallel, estimate, scheduler_class=scheduler)
        span = max(run.end for run in runs)
    else:
        span = bound * PLANNER_SLACK
    return CampaignEstimate(
        measurements=len(specs),
        bound=bound,
        busiest_node=max(loads.values(), default=0.0),
        total_work=total,
        makespan=span,
        max_parallel=max_parallel,
        from_history=sum(history.known(spec) for spec in specs),
        default_seconds=history.default,
        simulated=simulated,
        full_duplex=full_duplex,
    )

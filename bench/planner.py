"""Planner efficiency benchmark (not a test): `make bench` runs it.

SIMULATED TRANSFER TOOL: no transfer runs here. Each measurement's duration is drawn per
pair from a model of a heterogeneous cluster (some nodes are slow: a weaker NIC or disk),
and a discrete-event simulation (no sleeping) replays the real `ListScheduler` decisions.
A 100 Gbps WAN cannot run on one machine; this benchmark exists to measure the planner,
not the network.

Printed per N: makespan / lower bound (target <= 1.10 with P = N/2) and the speed-up over
running every measurement one after another (the paper's behaviour, P = 1).

Then campaigns that fit their cycle (orchestrator/campaign/rotation.py) at N = 100, 200,
300: 4 checks per ordered pair (https, gridftp x 8, 1 streams) whose durations average 60 s
(the issue's t), a 12 h cycle, P = N/2: the rotation's k (against ceil(bound / cycle), the
fewest that can fit) and each cycle's simulated makespan against its part's bound (target
<= 1.10); beside it the full-duplex plan (a node sending in one measurement while receiving
in another, P = N: the `full_duplex` setting, off by default), its k and makespan / bound.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.campaign.duplex import DuplexScheduler
from orchestrator.campaign.estimate import DurationHistory
from orchestrator.campaign.estimate import lower_bound as planner_bound
from orchestrator.campaign.planner import (
    MeasurementSpec,
    plan_campaign,
    simulate,
    unit_estimate,
)
from orchestrator.campaign.rotation import plan_rotation

TARGET = 1.10
ROW = "{:>4} {:>3} {:<28} {:>11} {:>11} {:>6} {:>9}"
FILE_GBIT = 11 * 8 * 2**30 / 1e9  # 11 x 1 GiB, in Gbit


def simulated_durations(
    names: list[str], rng: random.Random, slow_fraction: float = 0.125
) -> dict[MeasurementSpec, float]:
    """Seconds per measurement: 11 x 1 GiB at a rate limited by the slower node, per-pair
    path noise, and single-stream and GridFTP penalties. `slow_fraction` of the nodes are slow."""
    capacity = {
        n: (rng.uniform(8, 15) if rng.random() < slow_fraction else rng.uniform(40, 90))
        for n in names
    }
    path = {}
    durations = {}
    for spec in plan_campaign(names):
        pair = (spec.src, spec.dst)
        path.setdefault(pair, rng.uniform(0.6, 1.0))
        gbps = min(capacity[spec.src], capacity[spec.dst]) * path[pair]
        if spec.streams == 1:
            gbps *= rng.uniform(0.3, 0.6)
        if spec.protocol == "gridftp":
            gbps *= rng.uniform(0.7, 1.0)
        durations[spec] = 2.0 + FILE_GBIT / gbps  # 2 s of set-up per measurement
    return durations


def lower_bound(durations: dict[MeasurementSpec, float], max_parallel: int) -> float:
    load: dict[str, float] = {}
    for spec, d in durations.items():
        for node in spec.nodes:
            load[node] = load.get(node, 0.0) + d
    return max(max(load.values()), sum(durations.values()) / max_parallel)


def makespan(durations: dict[MeasurementSpec, float], max_parallel: int, estimate=None) -> float:
    runs = simulate(list(durations), max_parallel, durations.__getitem__, estimate)
    return max(r.end for r in runs)


class KnownDurations(DurationHistory):
    """The planner's estimates are the simulated durations themselves."""

    def __init__(self, durations: dict[MeasurementSpec, float]) -> None:
        super().__init__(Path("/nonexistent/durations.json"))
        self.known_durations = durations

    def estimate(self, spec: MeasurementSpec) -> float:
        return self.known_durations[spec]

    def known(self, spec: MeasurementSpec) -> bool:
        return True


CYCLE = 12 * 3600.0
CYCLE_ROW = "{:>4} {:>7} {:>5} {:>3} {:>10} {:>6}   {:>7} {:>5} {:>3} {:>10} {:>6}"


def cycle_fitting(rng: random.Random) -> float:
    """The rotation at N = 100, 200, 300; returns the worst per-cycle makespan / bound."""
    print()
    print(f"Fitting a {CYCLE / 3600:g} h cycle: 4 checks per ordered pair, mean 60 s, P = N/2")
    print(f"{'':>4} {'node-exclusive (P = N/2)':^36}   {'full duplex (P = N)':^36}")
    header = ("N", "bound", "k_min", "k", "worst part", "ratio") * 2
    header = header[:6] + header[7:]
    print(CYCLE_ROW.format(*header))
    worst = 0.0
    for n in (100, 200, 300):
        names = [f"node-{i:03d}" for i in range(n)]
        raw = simulated_durations(names, rng)
        scale = 60.0 / (sum(raw.values()) / len(raw))
        durations = {spec: d * scale for spec, d in raw.items()}
        history = KnownDurations(durations)
        cells = []
        for p, duplex in ((n // 2, False), (n, True)):
            rotation = plan_rotation(list(durations), p, history, CYCLE, full_duplex=duplex)
            scheduler = DuplexScheduler if duplex else None
            ratios, spans = [], []
            for part in rotation.parts:
                runs = simulate(part, p, durations.__getitem__, scheduler_class=scheduler)
                spans.append(max(r.end for r in runs))
                bound = planner_bound(part, p, durations.__getitem__, duplex)
                ratios.append(spans[-1] / bound)
            cells.append((rotation, max(spans), max(ratios)))
            if not duplex:
                worst = max(worst, max(ratios))
        (ex, ex_span, ex_ratio), (du, du_span, du_ratio) = cells
        specs = list(durations)
        bound = planner_bound(specs, n // 2, durations.__getitem__)
        duplex_bound = planner_bound(specs, n, durations.__getitem__, True)
        print(
            CYCLE_ROW.format(
                n,
                f"{bound / 3600:.1f}h",
                ex.k_min,
                ex.k,
                f"{ex_span / 3600:.2f}h",
                f"{ex_ratio:.3f}",
                f"{duplex_bound / 3600:.1f}h",
                du.k_min,
                du.k,
                f"{du_span / 3600:.2f}h",
                f"{du_ratio:.3f}",
            )
        )
    return worst


def main() -> int:
    rng = random.Random(20261121)
    print("Planner benchmark — SIMULATED transfer tool (discrete-event, no real transfers)")
    print(ROW.format("N", "P", "case", "makespan", "bound", "ratio", "speed-up"))
    worst = 0.0
    for n in (10, 30, 100):
        names = [f"node-{i:03d}" for i in range(n)]
        p = n // 2
        specs = plan_campaign(names)
        equal = {s: 60.0 for s in specs}
        rounds = 2 * (n - 1) if n % 2 == 0 else 2 * n
        cases = [
            ("equal durations", equal, None, 4 * 60.0 * rounds),
            ("heterogeneous, known", simulated_durations(names, rng), None, None),
        ]
        het = cases[1][1]
        # The planner only knows last campaign's durations: estimates off by up to +-30 %.
        noisy = {s: d * rng.uniform(0.7, 1.3) for s, d in het.items()}
        cases.append(("heterogeneous, estimated", het, noisy.__getitem__, None))
        mild = simulated_durations(names, rng, slow_fraction=0.0)
        cases.append(("heterogeneous, no slow node", mild, unit_estimate, None))
        # No history at all: every measurement is assumed to take as long as any other.
        cases.append(("heterogeneous, no estimate", het, unit_estimate, None))
        for label, durations, estimate, rounds_bound in cases:
            span = makespan(durations, p, estimate)
            bound = lower_bound(durations, p)
            if rounds_bound is not None:
                bound = max(bound, rounds_bound)
            sequential = sum(durations.values())
            ratio = span / bound
            worst = max(worst, ratio)
            print(
                ROW.format(
                    n,
                    p,
                    label,
                    f"{span:.0f}s",
                    f"{bound:.0f}s",
                    f"{ratio:.3f}",
                    f"{sequential / span:.1f}x",
                )
            )
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"worst makespan / lower bound = {worst:.3f} ({verdict} the target <= {TARGET})")
    per_cycle = cycle_fitting(rng)
    verdict = "meets" if per_cycle <= TARGET else "MISSES"
    print(f"worst per-cycle makespan / bound = {per_cycle:.3f} ({verdict} the target <= {TARGET})")
    return 0 if max(worst, per_cycle) <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

"""Planner efficiency benchmark (not a test): `make bench` runs it.

SIMULATED TRANSFER TOOL: no transfer runs here. Each measurement's duration is drawn per
pair from a model of a heterogeneous cluster (some nodes are slow: a weaker NIC or disk),
and a discrete-event simulation (no sleeping) replays the real `ListScheduler` decisions.
A 100 Gbps WAN cannot run on one machine; this benchmark exists to measure the planner,
not the network.

Printed per N: makespan / lower bound (target <= 1.10 with P = N/2) and the speed-up over
running every measurement one after another (the paper's behaviour, P = 1).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.campaign.planner import (
    MeasurementSpec,
    plan_campaign,
    simulate,
    unit_estimate,
)

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
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

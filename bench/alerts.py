"""Alert evaluation's cost (not a test): `.venv/bin/python bench/alerts.py`.

SYNTHETIC DATA in its own database (default tpcbench_alerts_bench, emptied first): N nodes
(default 101: 10,100 ordered pairs, one check each), H earlier measurements per check
(default 10, two a day), then two campaigns of one measurement per check, each evaluated as
one batch as the bulk ingest does (services.alerts.alerts_evaluate). Printed per campaign:
this process's CPU seconds and the wall time, per 10,000 checks; the target (issue 24) is
under 1 s of CPU per 10,000 checks. The database's own CPU (the medians' GROUP BY) is in
the wall time, not in the CPU figure.

Options: --nodes N, --history H.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from webapp_history import ensure_database, setup_django  # noqa: E402

DEFAULT_URL = "postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench_alerts_bench"
TARGET_CPU_S = 1.0


def measurement(src, dst, started, gbps: float | None):
    from webapp.results.models import Measurement

    ok = gbps is not None
    return Measurement(
        uuid=uuid.uuid4(), src=src, dst=dst, protocol="https", streams=8,
        transfer_count=3, file_size=2**30, throughput_gbps=gbps, makespan_gbps=gbps,
        succeeded=3 if ok else 0, failed=0 if ok else 3, started=started,
        finished=started + timedelta(seconds=30), payload_sha256="0" * 64,
    )  # fmt: skip


def load(nodes: int, history: int) -> list:
    from django.db import connection
    from django.utils import timezone

    from webapp.results.models import Alert, Measurement, Node

    with connection.cursor() as cursor:  # this benchmark's own database: emptied at once
        tables = [m._meta.db_table for m in (Alert, Measurement, Node)]
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")
    made = Node.objects.bulk_create([Node(name=f"alerts-{i:03}") for i in range(nodes)])
    pairs = [(a, b) for a in made for b in made if a != b]
    now = timezone.now()
    random.seed(24)
    rows = [
        measurement(a, b, now - timedelta(hours=12 * (history + 2 - h)), random.gauss(40, 2))
        for h in range(history)
        for a, b in pairs
    ]
    Measurement.objects.bulk_create(rows, batch_size=5000)
    return pairs


def campaign(pairs: list, hours_ago: float, slow: float) -> list:
    """One measurement per check; a fraction `slow` of them at 20 Gbit/s (a warning's half)."""
    from django.utils import timezone

    from webapp.results.models import Measurement

    started = timezone.now() - timedelta(hours=hours_ago)
    rows = [
        measurement(a, b, started + timedelta(seconds=i * 0.01), 20.0 if i % 10 < slow * 10 else 40)
        for i, (a, b) in enumerate(pairs)
    ]
    return Measurement.objects.bulk_create(rows, batch_size=5000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=101, help="nodes (checks: N x (N-1))")
    parser.add_argument("--history", type=int, default=10, help="earlier measurements per check")
    args = parser.parse_args()
    if args.nodes < 2 or args.history < 0:
        parser.error("--nodes must be at least 2 and --history not negative")
    ensure_database(DEFAULT_URL)
    setup_django(DEFAULT_URL)
    from webapp.results.models import Alert
    from webapp.results.services.alerts import alerts_evaluate

    started = time.perf_counter()
    pairs = load(args.nodes, args.history)
    print(f"{len(pairs)} checks, {args.history} earlier measurements each "
          f"(loaded in {time.perf_counter() - started:.0f} s)")  # fmt: skip
    worst = 0.0
    for name, hours_ago in (("first campaign (alerts made)", 11), ("second (alerts updated)", 1)):
        rows = campaign(pairs, hours_ago, slow=0.2)
        cpu, wall = time.process_time(), time.perf_counter()
        changes = alerts_evaluate(measurements=rows)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        per = 10_000 / len(pairs)
        worst = max(worst, cpu * per)
        print(f"{name}: {len(changes)} state changes; CPU {cpu * per:.2f} s, "
              f"wall {wall * per:.2f} s per 10,000 checks")  # fmt: skip
    states = {s: Alert.objects.filter(state=s).count() for s in ("ok", "warning", "critical")}
    print(f"alerts: {states}")
    print(f"worst CPU per 10,000 checks: {worst:.2f} s (target < {TARGET_CPU_S:.1f} s): "
          + ("met" if worst < TARGET_CPU_S else "NOT met"))  # fmt: skip
    return 0 if worst < TARGET_CPU_S else 1


if __name__ == "__main__":
    sys.exit(main())

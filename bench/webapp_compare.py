"""Two checkouts' webapp benchmarks side by side (not a test): bench/webapp.py of each, run
back to back on the same database, ROUNDS times (who goes first alternating), and per read
the median of each run's own ratios (app against raw SQL, measured interleaved in that run).

    .venv/bin/python bench/webapp_compare.py --before /tmp/main-checkout --after . \\
        [--rounds 3] [--requests 20] [--only TEXT]

Both use this interpreter (its packages), each its own code: bench/webapp.py puts its own
checkout's webapp/ first on the path. The database is TPCBENCH_BENCH_DATABASE_URL's.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

# A read row of bench/webapp.py: name, then p50/p95 uncached, cached, raw SQL, the ratios.
_ROW = re.compile(
    r"^(?P<name>\S.{0,27}?)\s+(?P<u50>[\d.]+)/(?P<u95>[\d.]+)\s+(?P<c50>[\d.]+)/(?P<c95>[\d.]+)"
    r"\s+(?P<s50>[\d.]+)/(?P<s95>[\d.]+)\s+(?P<ratio>[\d.]+)/(?P<cached>[\d.]+)"
)
_INGEST = re.compile(r"bulk lists of .*?: ([\d,]+) transfers/s")
UNCACHED_TARGET, CACHED_TARGET = 2.0, 0.5


def run_bench(checkout: Path, requests: int, only: list[str]) -> dict:
    """One run of a checkout's bench: per read its figures, and the bulk ingest rate."""
    command = [sys.executable, str(checkout / "bench" / "webapp.py"), "--requests", str(requests)]
    for text in only:
        command += ["--only", text]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: bench/webapp.py failed:\n{done.stdout}\n{done.stderr}")
    reads: dict[str, dict[str, float]] = {}
    ingest = None
    for line in done.stdout.splitlines():
        if match := _ROW.match(line):
            figures = {k: float(v) for k, v in match.groupdict().items() if k != "name"}
            reads[match["name"].strip()] = figures
        elif match := _INGEST.search(line):
            ingest = float(match[1].replace(",", ""))
    return {"reads": reads, "ingest": ingest}


def median_of(runs: list[dict], read: str, key: str) -> float:
    return statistics.median(run["reads"][read][key] for run in runs if read in run["reads"])


def report(before: list[dict], after: list[dict]) -> str:
    lines = [
        f"Per read, medians over {len(before)} runs each; ratios are each run's own (the app "
        "against the raw SQL, interleaved).",
        f"Targets: uncached p95 <= {UNCACHED_TARGET}x raw, served (cached) p95 <= "
        f"{CACHED_TARGET}x raw.",
        "",
        "{:<28} {:>22} {:>22}   {:>13} {:>13}  {}".format(
            "", "before: unc/cached/raw", "after: unc/cached/raw", "before ratios",
            "after ratios", "after meets",
        ),
    ]  # fmt: skip
    for read in after[0]["reads"]:

        def figures(runs: list[dict], read: str = read) -> tuple[str, str, float, float]:
            times = "/".join(f"{median_of(runs, read, k):.1f}" for k in ("u95", "c95", "s95"))
            ratio, cached = median_of(runs, read, "ratio"), median_of(runs, read, "cached")
            return times, f"{ratio:.2f}/{cached:.2f}", ratio, cached

        b_times, b_ratios, _, _ = figures(before) if read in before[0]["reads"] else ("-",) * 4
        a_times, a_ratios, ratio, cached = figures(after)
        meets = ratio <= UNCACHED_TARGET and cached <= CACHED_TARGET
        lines.append(
            f"{read:<28} {b_times:>22} {a_times:>22}   {b_ratios:>13} {a_ratios:>13}  "
            + ("yes" if meets else "NO")
        )
    ingest = [
        statistics.median(r["ingest"] for r in runs if r["ingest"]) if any(
            r["ingest"] for r in runs
        ) else None
        for runs in (before, after)
    ]  # fmt: skip
    if all(ingest):
        each = [", ".join(f"{r['ingest']:,.0f}" for r in runs) for runs in (before, after)]
        lines += [
            "",
            f"bulk ingest (transfers/s, median): before {ingest[0]:,.0f}, after {ingest[1]:,.0f}"
            f" ({ingest[1] / ingest[0]:.2f}x); runs: before {each[0]}; after {each[1]}",
        ]
    lines.append("(times: p95 in ms; ratios: uncached/cached p95 over raw SQL p95)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout measured first")
    parser.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--only", action="append", default=[], help="as bench/webapp.py's")
    args = parser.parse_args()
    before, after = [], []
    for round_number in range(1, args.rounds + 1):
        order = [("before", before, args.before), ("after", after, args.after)]
        if round_number % 2 == 0:  # who goes first alternates: no side always follows the other
            order.reverse()
        for name, runs, checkout in order:
            print(f"round {round_number}/{args.rounds}: {name} ({checkout})", flush=True)
            runs.append(run_bench(checkout.resolve(), args.requests, args.only))
    print()
    print(report(before, after))
    return 0


if __name__ == "__main__":
    sys.exit(main())

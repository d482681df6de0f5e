"""Clients benchmark (not a test): our native tools against gfal2 against the bare commands.

On a real 2-node lab (network namespaces; needs root), the same measurement — K concurrent
copies of one file from lab-1 to lab-2 with S streams — is driven, per protocol, by
- native: our tool (`run_measurement`, client native: httpx COPY, xrdcp, globus-url-copy),
- gfal2: `gfal-copy` through the same measurement code (client gfal2),
- bare: the command an operator types (`curl` for the source's macaroon, then `curl -X COPY`
  with the same headers, `xrdcp --tpc only` with the native environment, `globus-url-copy`
  with the native tool's argv),
interleaved (the order rotates each repetition), REPS times. Printed per protocol: the
median throughput of each (the paper's K*S*8/mean duration), the median seconds per copy,
the medians and ranges of the per-repetition ratios gfal2/native and bare/native, and the
CPU seconds the driving process and its children spent per measurement. Then, on the same
lab, the checksum step's cost (bench/checksum_cost.py): checksum off and on side by side, per
protocol and client, at each of --checksum-sizes.

    .venv/bin/python bench/clients.py [--reps 5] [--transfers 2] [--streams 2]
                                      [--file-size 256MiB] [--rate-gbit 2]
                                      [--protocols https,root,gridftp]
                                      [--checksum-sizes 16MiB,1GiB]

The lab is started and stopped here (prefix `tpcgb`, subnet 10.99.155+, unless
TPCBENCH_LAB_PREFIX / TPCBENCH_LAB_SUBNET_OFFSET say otherwise). There is no target
for the ratios (they are what an operator comparing the clients would see); exits 1 if a
copy fails.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from checksum_cost import DEFAULT_SIZES, bench_checksum, parse_sizes, report_checksum
from side_by_side import (
    bench_network,
    check_protocol_bench_args,
    cpu_seconds,
    on_a_lab_pair,
    protocol_bench_parser,
    run_bare,
)

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement.record import throughput_gbps
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.sizes import format_size

NETWORK = bench_network("tpcgb", 155)
DRIVERS = ("native", "gfal2", "bare")
ROW = "{:<8} {:>10} {:>10} {:>10} {:>8} {:>8} {:>8} {:>13} {:>13} {:>9} {:>9} {:>9}"


@dataclass
class Case:
    protocol: str
    gbps: dict[str, list[float]] = field(default_factory=lambda: {d: [] for d in DRIVERS})
    seconds: dict[str, list[float]] = field(default_factory=lambda: {d: [] for d in DRIVERS})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {d: [] for d in DRIVERS})
    failures: list[str] = field(default_factory=list)

    def ratios(self, driver: str) -> list[float]:
        """driver/native of each repetition: both ran in the same round, one after the other."""
        pairs = zip(self.gbps[driver], self.gbps["native"], strict=True)
        return [d / n for d, n in pairs if n > 0]


async def bare_durations(
    protocol: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials, size: int,
    streams: int, transfers: int,
) -> tuple[list[float], list[str]]:  # fmt: skip
    """K bare commands at once: (durations of the successes, failures), spawn to exit."""
    spans, failures = await run_bare(protocol, src, dst, creds, size, streams, transfers)
    return [end - start for start, end in spans], failures


async def run_client(
    client: str, protocol: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials,
    size: int, streams: int, transfers: int,
) -> tuple[list[float], list[str]]:  # fmt: skip
    request = MeasurementRequest.between(
        src, dst, protocol, streams, client=client, transfers=transfers, file_size=size
    )
    record = await run_measurement(request, creds=creds, measure_latency=False)
    failed = [t for t in record.transfers if not t.succeeded]
    failures = [f"{client}: {t.error_class} {t.message}" for t in failed]
    return [t.duration for t in record.successful], failures


def bench(nodes: Sequence[Endpoint], creds: ClientCredentials, args: argparse.Namespace) -> list:
    src, dst = nodes
    cases = [Case(p) for p in args.protocols]
    for rep in range(args.reps):
        # Rotate who goes first, so no driver always meets a warmer cache or a calmer machine.
        order = DRIVERS[rep % 3 :] + DRIVERS[: rep % 3]
        for case in cases:
            for driver in order:
                before = cpu_seconds()
                if driver == "bare":
                    run = bare_durations(case.protocol, src, dst, creds, args.file_size,
                                   args.streams, args.transfers)  # fmt: skip
                else:
                    run = run_client(driver, case.protocol, src, dst, creds, args.file_size,
                                     args.streams, args.transfers)  # fmt: skip
                durations, failures = asyncio.run(run)
                case.cpu[driver].append(cpu_seconds() - before)
                case.gbps[driver].append(throughput_gbps(args.file_size, durations))
                case.seconds[driver].append(statistics.fmean(durations) if durations else 0.0)
                case.failures += [f"{case.protocol} {f}" for f in failures]
        print(f"  repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    return cases


def report(cases: list[Case], args: argparse.Namespace) -> bool:
    rate = f"shaped to {args.rate_gbit:g} Gbit/s" if args.rate_gbit else "unshaped"
    print(
        f"clients: {args.transfers} x {format_size(args.file_size)} lab-1 -> lab-2, "
        f"{args.streams} stream(s), {args.reps} interleaved repetitions, links {rate}; medians"
    )
    print(
        ROW.format(
            "protocol", "native G/s", "gfal2 G/s", "bare G/s", "native s", "gfal2 s", "bare s",
            "gfal2/native", "bare/native", "nat CPU", "gfal CPU", "bare CPU",
        )
    )  # fmt: skip
    for case in cases:
        gfal, bare = case.ratios("gfal2"), case.ratios("bare")

        def ratio(values: list[float]) -> str:
            if not values:
                return "n/a"
            return f"{statistics.median(values):.2f} {min(values):.2f}-{max(values):.2f}"

        print(
            ROW.format(
                case.protocol,
                *(f"{statistics.median(case.gbps[d]):.3f}" for d in DRIVERS),
                *(f"{statistics.median(case.seconds[d]):.2f}" for d in DRIVERS),
                ratio(gfal), ratio(bare),
                *(f"{statistics.median(case.cpu[d]):.2f}" for d in DRIVERS),
            )
        )  # fmt: skip
        for failure in case.failures[:3]:
            print(f"    failed transfer: {failure[:300]}")
    print(
        "G/s: K*S*8/mean duration (Gbit/s); s: mean seconds per copy, from the request or\n"
        "process start to the verdict; ratios: median and range of the per-repetition ratio;\n"
        "CPU: CPU seconds of the driving process plus the commands it ran, per measurement"
    )
    ok = not any(case.failures for case in cases)
    print(f"clients: {'every copy succeeded' if ok else 'a copy failed'}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    programs = ("gfal-copy", "curl", "xrdcp", "globus-url-copy")
    parser = protocol_bench_parser(
        __doc__.split("\n\n")[0], f"Needs root (network namespaces), {', '.join(programs)}."
    )
    parser.add_argument("--streams", type=int, default=2, help="streams per copy, 1-15 (default 2)")
    parser.add_argument(
        "--checksum-sizes",
        type=parse_sizes,
        default=parse_sizes(DEFAULT_SIZES),
        help=f"file sizes of the checksum off/on table, '' for none (default {DEFAULT_SIZES})",
    )
    args = parser.parse_args(argv)
    check_protocol_bench_args(parser, args, programs)
    if not 1 <= args.streams <= 15:
        parser.error("--streams must be between 1 and 15 (root:// allows no more)")
    print("clients: starting a 2-node lab", file=sys.stderr)
    cases, costs = on_a_lab_pair("tpcbench-clients-", NETWORK, args, bench_both)
    ok = report(cases, args)
    if costs:
        print()
        ok = report_checksum(costs, args.reps, args.transfers, args.streams) and ok
    return 0 if ok else 1


def bench_both(
    nodes: Sequence[Endpoint], creds: ClientCredentials, args: argparse.Namespace
) -> list:
    """The clients side by side, then the checksum step off and on, on one lab."""
    cases = bench(nodes, creds, args)
    costs = bench_checksum(
        nodes, creds, args.protocols, args.checksum_sizes, args.reps, args.streams, args.transfers
    )
    return [cases, costs]


if __name__ == "__main__":
    sys.exit(main())

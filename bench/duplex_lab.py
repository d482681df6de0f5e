"""Full-duplex lab benchmark (not a test): does a node's throughput change when it sends in
one measurement while it receives in another (issue 24; the `full_duplex` setting, off by
default, orchestrator/campaign/duplex.py)?

On a real lab (network namespaces, the process runtime; needs root) of nodes A, B, C (lab-1,
lab-2, lab-3; D = lab-4 with the control case), links shaped to --rate-gbit, each case is
measured with the orchestrator's own `run_measurement` (K copies of one file, the figure a
campaign stores), the measurements of a case started together:
- half:    A -> B alone (A only sends, B only receives);
- full:    A -> B while C -> A (A sends and receives: what the full-duplex plan allows);
- swap:    A -> B while B -> A (both ends do both);
- control: A -> B while C -> D (two measurements at once, no node doing both: what running two
           at once on this machine costs, apart from duplex).
Every round runs each case once, the order rotating between rounds so no case always follows
the same one; --rounds rounds. Printed per protocol and case: the median A -> B throughput
(the paper's K*S*8/mean duration) and its range over the rounds, the median of the other
measurement's, the median and range of the per-round ratio A -> B(case) / A -> B(half) (run
in the same round), how much of A -> B's time the other measurement overlapped, the CPU share
the lab's servers and clients took, and the machine's busy share (/proc/stat, everyone's
work) while the case ran. The verdict: full duplex changes A -> B beyond the noise when the
median ratio of `full` is further from 1 than the half-duplex runs are from their own median
(their largest deviation, at least 2%); full against control (per round, against the larger
of that noise and the control's own) then says whether what changed is a node doing both or
merely two measurements running at once on this machine. A machine busier than 90% is said
to be saturated: the links no longer decide.

The lab's links cap what goes *into* a node (a tbf in the router, `lab up --link-capacity`);
--shape-send adds the same cap on what leaves it (a tbf on each node's eth0), as a NIC's two
directions both are, so that A's own acknowledgements of C -> A queue behind its A -> B
data, as on a real link.

    .venv/bin/python bench/duplex_lab.py [--rounds 3] [--protocols https,gridftp]
        [--streams 8] [--transfers 11] [--file-size 32MiB] [--rate-gbit 0.5]
        [--cases half,full,control] [--shape-send]

The lab (prefix `tpcdx`, subnets 10.99.65+, unless TPCBENCH_LAB_PREFIX /
TPCBENCH_LAB_SUBNET_OFFSET say otherwise) is started here and taken down on exit, Ctrl-C or
failure. There is no target (the answer is what it is); exits 1 if a copy fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from side_by_side import bench_network, cpu_seconds

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.lab.network import TBF_BURST, TBF_LATENCY, in_namespace, run
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.topology import NETNS
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.sizes import format_size, parse_size

NETWORK = bench_network("tpcdx", 65)
PROTOCOLS = ("https", "gridftp")
PROGRAMS = {"gridftp": "globus-url-copy"}
# Each case: the measurements started together, as (source, destination) letters; the
# first is always A -> B, the one compared.
CASES: dict[str, tuple[tuple[str, str], ...]] = {
    "half": (("A", "B"),),
    "full": (("A", "B"), ("C", "A")),
    "swap": (("A", "B"), ("B", "A")),
    "control": (("A", "B"), ("C", "D")),
}
DEFAULT_CASES = ("half", "full", "control")
NOISE_FLOOR = 0.02
SATURATED = 0.90  # the machine's CPU busy share above which it, not the links, may decide
ROW = "{:<8} {:>9} {:>11} {:>6} {:>16} {:>8} {:>5} {:>5}"


@dataclass
class Case:
    protocol: str
    name: str
    ab_gbps: list[float] = field(default_factory=list)
    other_gbps: list[float] = field(default_factory=list)
    overlap: list[float] = field(default_factory=list)
    cpu_busy: list[float] = field(default_factory=list)
    lab_cpu: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def machine_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine so far (/proc/stat's cpu line)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def lab_cpu_seconds(namespaces: Sequence[str]) -> float:
    """CPU seconds so far of the lab's servers (every process in its nodes' namespaces, with
    the children they reaped: GridFTP's per-session processes) and of this process and its
    reaped children (the clients: globus-url-copy; https's COPY runs in this process)."""
    ticks = 0
    for namespace in namespaces:
        for pid in subprocess.run(
            ["ip", "netns", "pids", namespace], capture_output=True, text=True
        ).stdout.split():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:  # ended meanwhile
                continue
            # after the command's ")": utime stime cutime cstime are fields 14-17
            ticks += sum(int(v) for v in stat.rsplit(")", 1)[1].split()[11:15])
    return ticks / os.sysconf("SC_CLK_TCK") + cpu_seconds()


async def timed(request: MeasurementRequest, creds: ClientCredentials):
    begin = time.monotonic()
    record = await run_measurement(request, creds=creds, measure_latency=False)
    return record, (begin, time.monotonic())


@dataclass
class CaseRun:
    records: list[MeasurementRecord]  # A -> B first
    overlap: float  # the share of A -> B's span the other measurement overlapped
    machine_busy: float  # the machine's CPU busy share meanwhile (everyone's work)
    lab_cpu: float  # the lab's and its clients' CPU share of the machine meanwhile


async def measure_case(
    pairs: Sequence[tuple[Endpoint, Endpoint]], nodes: Sequence[Endpoint],
    args: argparse.Namespace, protocol: str, creds: ClientCredentials,
) -> CaseRun:  # fmt: skip
    """The case's measurements started together."""
    requests = [
        MeasurementRequest.between(
            src, dst, protocol, args.streams, transfers=args.transfers, file_size=args.file_size
        )
        for src, dst in pairs
    ]
    namespaces = [node.netns for node in nodes if node.netns]
    busy0, total0 = machine_busy()
    lab0, begin = lab_cpu_seconds(namespaces), time.monotonic()
    results = await asyncio.gather(*(timed(request, creds) for request in requests))
    lab1, end = lab_cpu_seconds(namespaces), time.monotonic()
    busy1, total1 = machine_busy()
    (first_begin, first_end), others = results[0][1], [span for _, span in results[1:]]
    overlapped = [min(first_end, end) - max(first_begin, begin) for begin, end in others]
    overlap = min(overlapped, default=0.0) / (first_end - first_begin)
    lab_share = (lab1 - lab0) / ((end - begin) * (os.cpu_count() or 1))
    return CaseRun(
        [record for record, _ in results], max(overlap, 0.0),
        (busy1 - busy0) / (total1 - total0), lab_share,
    )  # fmt: skip


def shape_send(nodes: Sequence[Endpoint], rate_gbit: float) -> None:
    """Cap what leaves each node as the lab caps what enters it (the same tbf)."""
    for node in nodes:
        assert node.netns
        tbf = ["tbf", "rate", f"{rate_gbit}gbit", "burst", TBF_BURST, "latency", TBF_LATENCY]
        run(in_namespace(node.netns, "tc", "qdisc", "replace", "dev", "eth0", "root", *tbf))


def bench(nodes: Sequence[Endpoint], creds: ClientCredentials, args: argparse.Namespace):
    by_letter = dict(zip("ABCD", nodes, strict=False))
    cases = [Case(p, name) for p in args.protocols for name in args.cases]
    for rnd in range(args.rounds):
        for protocol in args.protocols:
            mine = [c for c in cases if c.protocol == protocol]
            shift = rnd % len(mine)
            for case in mine[shift:] + mine[:shift]:
                pairs = [(by_letter[s], by_letter[d]) for s, d in CASES[case.name]]
                done = asyncio.run(measure_case(pairs, nodes, args, protocol, creds))
                records = done.records
                case.ab_gbps.append(records[0].throughput_gbps)
                case.other_gbps += [r.throughput_gbps for r in records[1:]]
                case.overlap.append(done.overlap)
                case.cpu_busy.append(done.machine_busy)
                case.lab_cpu.append(done.lab_cpu)
                for record in records:
                    case.failures += [
                        f"{record.src}->{record.dst}: {t.error_class} {t.message}"
                        for t in record.transfers
                        if not t.succeeded
                    ]
                print(
                    f"  round {rnd + 1}/{args.rounds} {protocol} {case.name}: A->B "
                    f"{records[0].throughput_gbps:.3f} Gbit/s"
                    + "".join(f", {r.src}->{r.dst} {r.throughput_gbps:.3f}" for r in records[1:])
                    + f", overlap {done.overlap:.0%}, cpu: lab {done.lab_cpu:.0%} machine "
                    f"{done.machine_busy:.0%}, load {os.getloadavg()[0]:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    return cases


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}" if values else "-"


def ratios(values: list[float], against: list[float]) -> list[float]:
    """Per round: values[i] / against[i] (the two ran in the same round)."""
    return [v / a for v, a in zip(values, against, strict=True) if a > 0]


def ratio_text(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} {min(values):.2f}-{max(values):.2f}"


def verdict(mine: dict[str, Case], rate_gbit: float) -> list[str]:
    """Whether A -> B changes when A also receives, against the noise between rounds."""
    half = mine["half"].ab_gbps
    centre = statistics.median(half)
    lines = [
        f"half-duplex A->B reaches {centre / rate_gbit:.0%} of the {rate_gbit:g} Gbit/s cap, "
        f"the lab using {statistics.median(mine['half'].lab_cpu):.0%} of the machine's CPU, "
        f"the machine {statistics.median(mine['half'].cpu_busy):.0%} busy"
    ]
    if max(statistics.median(c.cpu_busy) for c in mine.values()) > SATURATED:
        lines.append(
            "the machine's CPU was saturated (others' work too): these figures measure CPU "
            "contention as much as the links; rerun when `uptime` is low"
        )
    if "full" not in mine or centre <= 0:
        return lines
    noise = max(NOISE_FLOOR, max(abs(h / centre - 1) for h in half))
    change = statistics.median(ratios(mine["full"].ab_gbps, half)) - 1
    lines.append(
        f"verdict: A->B while A also receives (full) is {change:+.1%} against half duplex; "
        f"the noise between rounds is {noise:.1%}: "
        + ("a change beyond the noise" if abs(change) > noise else "no change beyond the noise")
    )
    if "control" in mine:
        control = mine["control"].ab_gbps
        # two measurements at once vary more than one alone: the control's own spread too
        both = max(noise, max(abs(c / statistics.median(control) - 1) for c in control))
        apart = ratios(mine["full"].ab_gbps, control)
        lines.append(
            f"full against control (two measurements at once, no node doing both), per round: "
            f"{ratio_text(apart)}; noise {both:.1%}: "
            + ("within it: a node doing both costs nothing beyond running two at once"
               if abs(statistics.median(apart) - 1) <= both
               else "beyond it: a node doing both changes A->B")
        )  # fmt: skip
    return lines


def report(cases: list[Case], args: argparse.Namespace, load: tuple[float, float]) -> bool:
    send = "both directions" if args.shape_send else "into each node"
    print(
        f"duplex: {args.transfers} x {format_size(args.file_size)}, {args.streams} streams, "
        f"links {args.rate_gbit:g} Gbit/s ({send}), {args.rounds} interleaved rounds; "
        f"load average {load[0]:.2f} before, {load[1]:.2f} after; medians"
    )
    print(
        ROW.format("case", "A->B Gb/s", "range", "other", "ratio to half", "overlap", "lab", "busy")
    )
    ok = True
    for protocol in args.protocols:
        mine = {c.name: c for c in cases if c.protocol == protocol}
        print(f"{protocol}:")
        for case in mine.values():
            pair = case.name != "half"
            print(
                ROW.format(
                    case.name, f"{statistics.median(case.ab_gbps):.3f}", spread(case.ab_gbps),
                    f"{statistics.median(case.other_gbps):.3f}" if pair else "-",
                    ratio_text(ratios(case.ab_gbps, mine["half"].ab_gbps)) if pair else "1",
                    f"{statistics.median(case.overlap):.0%}" if pair else "-",
                    f"{statistics.median(case.lab_cpu):.0%}",
                    f"{statistics.median(case.cpu_busy):.0%}",
                )
            )  # fmt: skip
            for failure in case.failures[:3]:
                print(f"    failed transfer: {failure[:300]}")
            ok &= not case.failures
        for line in verdict(mine, args.rate_gbit):
            print(f"  {line}")
    print(
        "Gb/s: K*S*8/mean duration (above the cap when the copies end at different times); "
        "other: the\nmeasurement beside A->B; ratio: per round, A->B in the case / A->B alone; "
        "overlap: of A->B's time;\nlab: CPU of the lab and its clients, busy: of the whole "
        "machine (share of all cores)."
    )
    return ok


def parse_list(choices: Sequence[str]):
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(text.split(","))
        unknown = [item for item in items if item not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"{','.join(unknown)} not in {','.join(choices)}")
        return items

    return parse


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Needs root (network namespaces) and, for gridftp, globus-url-copy.",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds, at least 3 (default 3)")
    parser.add_argument(
        "--protocols", type=parse_list(PROTOCOLS), default=PROTOCOLS,
        help="a comma-separated subset of https,gridftp (default both)",
    )  # fmt: skip
    parser.add_argument("--streams", type=int, default=8, help="streams per copy (default 8)")
    parser.add_argument("--transfers", type=int, default=11, help="K copies at once (default 11)")
    parser.add_argument(
        "--file-size", type=parse_size, default=parse_size("32MiB"), help="default 32MiB"
    )
    parser.add_argument(
        "--rate-gbit", type=float, default=0.5, help="each link's cap, Gbit/s (default 0.5)"
    )
    parser.add_argument(
        "--cases", type=parse_list(tuple(CASES)), default=DEFAULT_CASES,
        help="a comma-separated subset of half,full,swap,control (default half,full,control; "
        "half always runs; control adds a fourth node)",
    )  # fmt: skip
    parser.add_argument(
        "--shape-send", action="store_true",
        help="cap what leaves each node too (default: only what enters it, as lab up does)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.rounds < 3:
        parser.error("--rounds must be at least 3 (a median and a spread need them)")
    if args.streams < 1 or args.transfers < 1:
        parser.error("--streams and --transfers must be at least 1")
    if args.rate_gbit <= 0:
        parser.error("--rate-gbit must be positive: an unshaped lab measures the CPU")
    args.cases = ("half", *(c for c in args.cases if c != "half"))
    if os.geteuid() != 0:
        parser.error("needs root (the lab's network namespaces)")
    programs = [PROGRAMS[p] for p in args.protocols if p in PROGRAMS]
    missing = [program for program in programs if not shutil.which(program)]
    if missing:
        parser.error(f"not installed: {', '.join(missing)} (scripts/install-system-deps.sh)")
    return args


def terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the lab's `finally` takes it down, as on Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, terminate)
    count = 4 if "control" in args.cases else 3
    print(f"duplex: starting a {count}-node lab ({NETWORK.prefix})", file=sys.stderr, flush=True)
    load_before = os.getloadavg()[0]
    try:
        with temporary_lab(
            "tpcbench-duplex-", count, args.file_size, mode=NETNS, network=NETWORK,
            rate_gbit=args.rate_gbit,
        ) as (_, inventory):  # fmt: skip
            if args.shape_send:
                shape_send(inventory.nodes, args.rate_gbit)
            cases = bench(inventory.nodes, inventory.client, args)
    except KeyboardInterrupt:
        print("duplex: interrupted; the lab is down", file=sys.stderr)
        return 130
    return 0 if report(cases, args, (load_before, os.getloadavg()[0])) else 1


if __name__ == "__main__":
    sys.exit(main())

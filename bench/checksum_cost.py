"""The checksum step's cost, checksum off and on side by side (bench/clients.py's second
table): per protocol, client and file size, the same K copies with `--checksum none` and with
`--checksum adler32`, interleaved (which goes first alternates each repetition).

Printed per row: the median seconds per copy without and with the step, the median of the
`checksum` phase, its share of the copy with the step, and the median and range of the
per-repetition duration ratio with/without. XRootD computes a file's digest when first asked
and keeps it while the file is unchanged (docs/measurements.md, "The checksum step"), so after
the first repetition the source's digest is a lookup and the destination's (a new file each
time) a computation over the whole file; GridFTP computes both every time.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.servers.source_file import ensure_source_file
from orchestrator.sizes import format_size, parse_size

CLIENTS = ("native", "gfal2")
SETTINGS = ("none", "adler32")
DEFAULT_SIZES = "16MiB,1GiB"
ROW = "{:<8} {:<7} {:>8} {:>9} {:>9} {:>11} {:>9} {:>15}"


@dataclass
class CostCase:
    protocol: str
    client: str
    size: int
    seconds: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SETTINGS})
    phase: list[float] = field(default_factory=list)  # median checksum phase per repetition
    failures: list[str] = field(default_factory=list)

    def ratios(self) -> list[float]:
        pairs = zip(self.seconds["adler32"], self.seconds["none"], strict=True)
        return [on / off for on, off in pairs if off > 0]


def parse_sizes(text: str) -> tuple[int, ...]:
    """`16MiB,1GiB` -> byte counts; an empty text: no checksum table."""
    return tuple(parse_size(part) for part in text.split(",") if part.strip())


def ensure_source(src: Endpoint, size: int) -> None:
    """The source file of `size` on the lab's source node, written as the lab writes its own
    (source_file.py: its adler32 stored with it) and owned like it."""
    root = Path(src.data_root)
    path, written = ensure_source_file(root, size)
    if written:
        model = next(p for p in root.glob("tpcbench-source-*") if p != path).stat()
        os.chown(path, model.st_uid, model.st_gid)


async def one_setting(
    case: CostCase, checksum: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials,
    streams: int, transfers: int,
) -> None:  # fmt: skip
    request = MeasurementRequest.between(
        src, dst, case.protocol, streams, client=case.client, checksum=checksum,  # type: ignore[arg-type]
        transfers=transfers, file_size=case.size,
    )  # fmt: skip
    record = await run_measurement(request, creds=creds, measure_latency=False, timeout=1200)
    label = f"{case.protocol} {case.client} {format_size(case.size)} checksum {checksum}"
    case.failures += [
        f"{label}: {t.error_class} {t.message}" for t in record.transfers if not t.succeeded
    ]
    durations = [t.duration for t in record.successful]
    case.seconds[checksum].append(statistics.median(durations) if durations else 0.0)
    if checksum != "none":
        phases = [t.phases.get("checksum", 0.0) for t in record.successful]
        case.phase.append(statistics.median(phases) if phases else 0.0)
        if record.successful and not any(phases):
            case.failures.append(f"{label}: no checksum phase was recorded")


def bench_checksum(
    nodes: Sequence[Endpoint], creds: ClientCredentials, protocols: Sequence[str],
    sizes: Sequence[int], reps: int, streams: int, transfers: int,
) -> list[CostCase]:  # fmt: skip
    src, dst = nodes
    for size in sizes:
        ensure_source(src, size)
    cases = [CostCase(p, c, s) for s in sizes for p in protocols for c in CLIENTS]
    for rep in range(reps):
        order = SETTINGS if rep % 2 == 0 else SETTINGS[::-1]
        for case in cases:
            for checksum in order:
                asyncio.run(one_setting(case, checksum, src, dst, creds, streams, transfers))
        print(
            f"  checksum repetition {rep + 1}/{reps} done",
            flush=True,
            file=sys.stderr,
        )
    return cases


def report_checksum(cases: Sequence[CostCase], reps: int, transfers: int, streams: int) -> bool:
    print(
        f"checksum step: {transfers} copies lab-1 -> lab-2 at once, {streams} stream(s), "
        f"checksum none and adler32 interleaved, {reps} repetitions; medians"
    )
    print(
        ROW.format("protocol", "client", "size", "off s", "on s", "checksum s", "share", "on/off")
    )
    for case in cases:
        ratios = case.ratios()
        spread = (
            f"{statistics.median(ratios):.2f} {min(ratios):.2f}-{max(ratios):.2f}"
            if ratios
            else "n/a"
        )
        on = statistics.median(case.seconds["adler32"])
        phase = statistics.median(case.phase) if case.phase else 0.0
        print(
            ROW.format(
                case.protocol, case.client, format_size(case.size),
                f"{statistics.median(case.seconds['none']):.2f}", f"{on:.2f}", f"{phase:.2f}",
                f"{phase / on:.1%}" if on > 0 else "n/a", spread,
            )
        )  # fmt: skip
        for failure in case.failures[:3]:
            print(f"    failed: {failure[:300]}")
    print(
        "off/on s: median seconds per copy without/with the checksum step; checksum s: the\n"
        "median `checksum` phase; share: checksum s / on s; on/off: median and range of the\n"
        "per-repetition ratio of the two medians"
    )
    return not any(case.failures for case in cases)

"""Authentication benchmark (not a test): what securing the servers costs (issue 19).

On a real 2-node lab (network namespaces; needs root) the same measurement — K concurrent
copies of one file from lab-1 to lab-2, driven by our native tools — goes alternately to
- after: the lab's own servers, secure by default: HTTPS with the client certificate and a
  macaroon for the server-to-server leg (the `authorize` phase), root:// with GSI on every
  login, the destination's own with its host certificate;
- before: open servers on the same two nodes (other ports, the same links and source file),
  configured as before the servers were secured (`XrootdSettings(open_access=True)`: no
  authentication, no authorization, root:// anonymous), the https tool asking for no
  macaroon (`HttpsTpc(other_leg="anonymous")`).
GridFTP's authentication did not change (GSI with delegation on both servers either way): it
runs as the control, its ratio is what the second set of servers and the noise alone do.

REPS repetitions, the side going first alternating, for 1 and 8 streams. Printed per
protocol and streams: the median throughput before and after (the paper's K*S*8/mean
duration), the median and range of the per-repetition ratio after/before, the median setup
(request to first progress, `TransferRecord.setup_s`) before and after and the difference,
and the medians of the `authorize` and `handshake` phases.

    .venv/bin/python bench/authentication.py [--reps 5] [--transfers 2] [--file-size 256MiB]
                                             [--rate-gbit 2] [--protocols https,root,gridftp]

The lab is started and stopped here (prefix `tpcauth`, subnet 10.99.175+, unless
TPCBENCH_LAB_PREFIX / TPCBENCH_LAB_SUBNET_OFFSET say otherwise). There is no target (the
cost is what it is); exits 1 if a copy fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from side_by_side import bench_network, check_protocol_bench_args, protocol_bench_parser

from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.lab.extra_servers import ExtraServer, extra_servers
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.topology import NETNS
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.sizes import format_size
from orchestrator.transfers import TransferTool, transfer_tool

NETWORK = bench_network("tpcauth", 175)
STREAMS = (1, 8)
SIDES = ("before", "after")
# Beside each node's own servers: XRootD as it was configured before (GridFTP is the same).
OPEN_SERVER = ExtraServer(
    "open", {"https": 18443, "root": 11094, "gridftp": 12811}, (21000, 21099), open_access=True
)
ROW = "{:<8} {:>7} {:>9} {:>9} {:>15} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9}"


@dataclass
class Case:
    protocol: str
    streams: int
    gbps: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    # every successful copy's seconds: setup (request to first progress) and per phase
    setup: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    phases: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: {s: {} for s in SIDES}
    )
    failures: list[str] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        """after/before of each repetition: the two ran back to back."""
        pairs = zip(self.gbps["after"], self.gbps["before"], strict=True)
        return [a / b for a, b in pairs if b > 0]

    def add(self, side: str, record: MeasurementRecord) -> None:
        self.gbps[side].append(record.throughput_gbps)
        for transfer in record.transfers:
            if not transfer.succeeded:
                self.failures.append(f"{side}: {transfer.error_class} {transfer.message}")
                continue
            if transfer.setup_s is not None:
                self.setup[side].append(transfer.setup_s)
            for phase, seconds in transfer.phases.items():
                self.phases[side].setdefault(phase, []).append(seconds)


def tools(protocol: str) -> dict[str, TransferTool]:
    """The same native tool on both sides; before, https sends no macaroon."""
    before = {"other_leg": "anonymous"} if protocol == "https" else {}
    return {"before": transfer_tool(protocol, **before), "after": transfer_tool(protocol)}


def bench(
    servers: dict[str, tuple[Endpoint, Endpoint]],
    creds: ClientCredentials,
    args: argparse.Namespace,
) -> list[Case]:
    cases = [Case(p, s) for p in args.protocols for s in STREAMS]
    for rep in range(args.reps):
        for case in cases:
            # Alternate who goes first, so neither side always meets a warmer cache.
            for side in SIDES if rep % 2 == 0 else SIDES[::-1]:
                src, dst = servers[side]
                record = asyncio.run(
                    run_measurement(
                        MeasurementRequest.between(
                            src, dst, case.protocol, case.streams,
                            transfers=args.transfers, file_size=args.file_size,
                        ),
                        creds=creds, tool=tools(case.protocol)[side], measure_latency=False,
                    )
                )  # fmt: skip
                case.add(side, record)
        print(f"  repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    return cases


def run_on_a_lab(args: argparse.Namespace) -> list[Case]:
    """A 2-node lab (after) and an open server beside each node's own (before)."""
    with (
        temporary_lab(
            "tpcbench-auth-", 2, args.file_size, mode=NETNS, network=NETWORK,
            rate_gbit=args.rate_gbit or None,
        ) as (home, inventory),
        ExitStack() as stack,
    ):  # fmt: skip
        opened = [
            stack.enter_context(extra_servers(home, inventory, node.name, "auth", [OPEN_SERVER]))[0]
            for node in inventory.nodes
        ]
        (open_src, open_data), (open_dst, _) = opened
        # The very same source file (a hard link: the same bytes, the same memory).
        lab_source = Path(inventory.nodes[0].data_root) / source_name(args.file_size).lstrip("/")
        os.link(lab_source, open_data / lab_source.name)
        src, dst = inventory.nodes
        return bench({"before": (open_src, open_dst), "after": (src, dst)}, inventory.client, args)


def milliseconds(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f}" if values else "-"


def report(cases: list[Case], args: argparse.Namespace) -> bool:
    rate = f"shaped to {args.rate_gbit:g} Gbit/s" if args.rate_gbit else "unshaped"
    print(
        f"authentication: {args.transfers} x {format_size(args.file_size)} lab-1 -> lab-2, "
        f"{args.reps} interleaved repetitions, links {rate}; medians; before: open servers, "
        "no macaroon; after: secure by default"
    )
    print(
        ROW.format(
            "protocol", "streams", "bef Gb/s", "aft Gb/s", "aft/bef", "setup bef", "setup aft",
            "+setup", "authorize", "hs bef", "hs aft",
        )
    )  # fmt: skip
    for case in cases:
        ratios = case.ratios
        ratio = (
            f"{statistics.median(ratios):.3f} {min(ratios):.2f}-{max(ratios):.2f}"
            if ratios
            else "n/a"
        )
        before, after = case.setup["before"], case.setup["after"]
        extra = (
            f"{(statistics.median(after) - statistics.median(before)) * 1000:+.0f}"
            if before and after
            else "-"
        )
        print(
            ROW.format(
                case.protocol + ("*" if case.protocol == "gridftp" else ""), case.streams,
                f"{statistics.median(case.gbps['before']):.3f}",
                f"{statistics.median(case.gbps['after']):.3f}", ratio,
                milliseconds(before), milliseconds(after), extra,
                milliseconds(case.phases["after"].get("authorize", [])),
                milliseconds(case.phases["before"].get("handshake", [])),
                milliseconds(case.phases["after"].get("handshake", [])),
            )
        )  # fmt: skip
        for failure in case.failures[:3]:
            print(f"    failed transfer: {failure[:300]}")
    print(
        "Gb/s: K*S*8/mean duration; aft/bef: median and range of the per-repetition ratio;\n"
        "setup: request to first progress, ms, per copy; +setup: after - before; authorize:\n"
        "the macaroon (https after only); hs: the handshake phase, ms (-: none).\n"
        "* gridftp is the control: GSI either way, so only the servers and the noise differ."
    )
    ok = not any(case.failures for case in cases)
    print(f"authentication: {'every copy succeeded' if ok else 'a copy failed'}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    programs = ("xrdcp", "globus-url-copy")
    parser = protocol_bench_parser(
        __doc__.split("\n\n")[0], f"Needs root (network namespaces), {', '.join(programs)}."
    )
    args = parser.parse_args(argv)
    check_protocol_bench_args(parser, args, programs)
    print("authentication: starting a 2-node lab and open servers beside it", file=sys.stderr)
    return 0 if report(run_on_a_lab(args), args) else 1


if __name__ == "__main__":
    sys.exit(main())

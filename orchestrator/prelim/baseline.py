"""What the link between two nodes carries: an iperf3 test, 8 TCP streams, memory to memory,
from the source node to the destination (the paper used ethr, which our registries do not
serve; docs/prelim.md says how the two figures compare). TPC throughput is then read as a
fraction of it (the paper's Figure 5 reference line).

In the lab both ends run inside the nodes' network namespaces, so the traffic takes the
same path (router, link caps, WAN delay) as the transfers.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid as uuidlib
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.network import listeners_in
from orchestrator.transfers.record import iso

BASELINE_PORT = 5201
DEFAULT_STREAMS = 8
DEFAULT_SECONDS = 10
TOOL = "iperf3"


@dataclass
class Baseline:
    """One link baseline, in the shape POST /api/v1/baselines/ takes; a failure is data."""

    src: str
    dst: str
    streams: int
    duration_s: int
    campaign: str | None = None
    uuid: str = field(default_factory=lambda: str(uuidlib.uuid4()))
    tool: str = TOOL
    started: str = field(default_factory=lambda: iso(datetime.now(UTC)))
    finished: str | None = None
    throughput_gbps: float | None = None
    error: str = ""
    omit_s: int = 0  # the first seconds left out of the figure (slow start)
    retransmits: int | None = None  # the sender's TCP retransmissions over the test

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def check_baseline_possible(src: Endpoint, dst: Endpoint) -> None:
    """iperf3 must run at both ends, in the nodes' own network position."""
    for node in (src, dst):
        if not node.netns:
            raise UserError(
                f"a link baseline runs iperf3 at both ends, inside the lab nodes' network "
                f"namespaces; {node.name} has none (a lab in netns mode, as root, has them; on "
                "a cluster run iperf3 between the nodes yourself, see docs/prelim.md)"
            )


def _in(node: Endpoint, *argv: str) -> list[str]:
    assert node.netns is not None
    return ["ip", "netns", "exec", node.netns, *argv]


def measure_baseline(
    src: Endpoint,
    dst: Endpoint,
    *,
    streams: int = DEFAULT_STREAMS,
    seconds: int = DEFAULT_SECONDS,
    campaign: str | None = None,
    port: int = BASELINE_PORT,
) -> Baseline:
    """iperf3 from `src` to `dst`: the receiver's total over the test, in Gbit/s."""
    check_baseline_possible(src, dst)
    result = Baseline(src.name, dst.name, streams, seconds, campaign)
    try:
        server = subprocess.Popen(
            _in(dst, TOOL, "--server", "--one-off", "--bind", dst.address, "--port", str(port)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:  # no `ip` to enter the namespace with: a failed baseline, as data
        result.error = f"iperf3 server on {dst.name} could not be started: {exc}"
        result.finished = iso(datetime.now(UTC))
        return result
    try:
        deadline = time.monotonic() + 10
        # listening? asked of the namespace's sockets: a test connection would be taken by
        # iperf3 for the one client it serves
        while not listeners_in(dst.netns, [port]):
            exited = server.poll() is not None
            if exited or time.monotonic() > deadline:
                detail = "no answer in 10 s"
                if exited and server.stderr is not None:
                    detail = server.stderr.read().decode(errors="replace").strip() or detail
                result.error = f"iperf3 server on {dst.name} did not start: {detail}"
                return result
            time.sleep(0.1)
        client = subprocess.run(
            _in(src, TOOL, "--client", dst.address, "--port", str(port), "--bind", src.address,
                "--parallel", str(streams), "--time", str(seconds), "--json"),
            capture_output=True, text=True, timeout=seconds + 60, check=False,
        )  # fmt: skip
        result.throughput_gbps, result.error = _parse(client.stdout, client.stderr)
    except subprocess.TimeoutExpired:
        result.error = f"iperf3 {src.name} -> {dst.name} did not finish in {seconds + 60} s"
    finally:
        server.kill()
        server.wait()
        result.finished = iso(datetime.now(UTC))
    return result


def _parse(stdout: str, stderr: str) -> tuple[float | None, str]:
    try:
        report = json.loads(stdout)
    except ValueError:
        return None, f"iperf3 printed no report: {(stderr or stdout).strip()[:300]}"
    if report.get("error"):
        return None, f"iperf3: {report['error']}"
    try:
        bits = float(report["end"]["sum_received"]["bits_per_second"])
    except (KeyError, TypeError, ValueError):
        return None, "iperf3's report has no end.sum_received"
    return round(bits / 1e9, 6), ""

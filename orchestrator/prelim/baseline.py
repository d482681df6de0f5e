"""What the link between two nodes carries: an iperf3 test, memory to memory, from the source
node to the destination, with as many TCP streams as the measurement it is compared with and
its slow start left out (the paper used ethr, which our registries do not serve;
docs/prelim.md says how the two figures compare). TPC throughput is then read as a fraction
of it (the paper's Figure 5 reference line).

Where iperf3 runs: in the lab, at both ends inside the nodes' network namespaces (the server
started here for the one test), so the traffic takes the transfers' path (router, link caps,
WAN delay); on Kubernetes, the client in the source node's server pod (its "iperf3"
container), against the iperf3 server that already listens beside the destination's XRootD
(`ports["iperf3"]`). Both build the same iperf3 options and read the same JSON report.
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
from orchestrator.measurement.spec import DEFAULT_TRANSFERS
from orchestrator.transfers.record import iso

BASELINE_PORT = 5201  # the lab's iperf3 server, started for the test in the destination node
MAX_STREAMS = 128  # iperf3 refuses more (--parallel)
STREAMS_PER_TRANSFER = 8  # the most streams a campaign's transfers take by default (8,1)
# A TPC measurement runs K x S TCP streams at once (11 x 8 = 88): the link is read with as many
DEFAULT_STREAMS = min(DEFAULT_TRANSFERS * STREAMS_PER_TRANSFER, MAX_STREAMS)
DEFAULT_SECONDS = 10  # measured, after the omitted seconds
DEFAULT_OMIT = 2  # seconds of slow start left out of the figure (iperf3 --omit)
MAX_SECONDS = 3600
TOOL = "iperf3"
CONTAINER = "iperf3"  # on Kubernetes: the server pod's container that carries iperf3
# Seconds on top of the test before a hung iperf3 client is given up: a minute, and half a
# second per stream, as iperf3 opens its streams one after another (a round trip or two each)
EXEC_GRACE = 60
SETUP_PER_STREAM = 0.5


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


def link_streams(transfers: int, streams: int) -> int:
    """How many streams a baseline compared with K transfers of S streams each takes."""
    return max(1, min(transfers * streams, MAX_STREAMS))


def check_baseline_options(streams: int, seconds: int, omit: int) -> None:
    """UserError unless iperf3 can run `streams` streams for `seconds` after `omit` seconds."""
    if not 1 <= streams <= MAX_STREAMS:
        raise UserError(
            f"a baseline takes 1-{MAX_STREAMS} streams (iperf3's maximum), not {streams}"
        )
    if not 1 <= seconds <= MAX_SECONDS:
        raise UserError(f"a baseline runs 1-{MAX_SECONDS} seconds, not {seconds}")
    if not 0 <= omit < seconds:
        raise UserError(
            f"the seconds of slow start left out (omit {omit}) must be at least 0 and fewer "
            f"than the seconds measured ({seconds}): e.g. --seconds 10 --omit 2"
        )


def _where(node: Endpoint) -> str | None:
    """Where iperf3 runs for `node`: "netns" (a lab node), "pod" (a server pod whose iperf3
    server listens on `ports["iperf3"]`), or None (nowhere we can reach)."""
    if node.netns:
        return "netns"
    if node.pod and "iperf3" in node.ports:
        return "pod"
    return None


def check_baseline_possible(src: Endpoint, dst: Endpoint) -> None:
    """iperf3 must run at both ends in the nodes' own network position, both the same way."""
    for node in (src, dst):
        if _where(node) is None:
            why = f"{node.name} has none: no network namespace, no pod"
            if node.pod:
                why = f"{node.name}'s pod {node.pod} has no iperf3 port"
            raise UserError(
                f"a link baseline runs iperf3 at both ends: inside the lab nodes' network "
                f"namespaces (a lab in netns mode, as root), or on Kubernetes in the server "
                f"pods' iperf3 container (the chart's baseline setting); {why}"
            )
    if _where(src) != _where(dst):
        raise UserError(
            f"a link baseline runs iperf3 the same way at both ends; {src.name} is in a "
            f"{_where(src)}, {dst.name} in a {_where(dst)}"
        )


def iperf3_client_argv(
    address: str, port: int, *, streams: int, seconds: int, omit: int, bind: str | None = None
) -> list[str]:
    """The iperf3 client's command line, the same in a namespace and in a pod.

    On Kubernetes the chart's admission policy (charts/tpc-bench/templates/
    baseline-exec-policy.yaml) lets the orchestrator exec exactly these options, with numbers
    and addresses: an option added here must be added there too."""
    argv = [TOOL, "--client", address, "--port", str(port)]
    argv += ["--bind", bind] if bind else []
    argv += ["--parallel", str(streams), "--time", str(seconds), "--omit", str(omit), "--json"]
    return argv


def measure_baseline(
    src: Endpoint,
    dst: Endpoint,
    *,
    streams: int = DEFAULT_STREAMS,
    seconds: int = DEFAULT_SECONDS,
    omit: int = DEFAULT_OMIT,
    campaign: str | None = None,
    port: int = BASELINE_PORT,
) -> Baseline:
    """iperf3 from `src` to `dst`: what the receiver got over `seconds` after `omit` seconds,
    in Gbit/s, and the sender's retransmits. `port`: the lab's server port (on Kubernetes the
    destination's `ports["iperf3"]`). UserError for impossible arguments; anything that goes
    wrong while measuring is the baseline's error."""
    check_baseline_possible(src, dst)
    check_baseline_options(streams, seconds, omit)
    result = Baseline(src.name, dst.name, streams, seconds, campaign, omit_s=omit)
    options = {"streams": streams, "seconds": seconds, "omit": omit}
    try:
        if _where(src) == "pod":
            _client_in_pod(src, dst, options, result)
        else:
            _in_namespaces(src, dst, options, port, result)
    finally:
        result.finished = iso(datetime.now(UTC))
    return result


def _timeout(options: dict[str, int]) -> int:
    setup = int(options["streams"] * SETUP_PER_STREAM)
    return options["omit"] + options["seconds"] + EXEC_GRACE + setup


def _client_in_pod(src: Endpoint, dst: Endpoint, options: dict[str, int], result: Baseline) -> None:
    """The client in the source's pod; the destination's iperf3 server already listens."""
    from orchestrator.cluster.pod_exec import run_in_pod  # the kubernetes client, only here

    assert src.pod is not None
    argv = iperf3_client_argv(dst.address, dst.ports["iperf3"], **options)
    try:
        _code, stdout, stderr = run_in_pod(src.pod, CONTAINER, argv, _timeout(options))
    except Exception as exc:  # the API, the network, a vanished pod: a failed baseline, as data
        result.error = f"iperf3 in {src.pod} could not run: {type(exc).__name__}: {exc}"
        return
    _read_report(stdout, stderr, result)


def _in(node: Endpoint, *argv: str) -> list[str]:
    assert node.netns is not None
    return ["ip", "netns", "exec", node.netns, *argv]


def _in_namespaces(
    src: Endpoint, dst: Endpoint, options: dict[str, int], port: int, result: Baseline
) -> None:
    """A one-off server in the destination's namespace, the client in the source's."""
    try:
        server = subprocess.Popen(
            _in(dst, TOOL, "--server", "--one-off", "--bind", dst.address, "--port", str(port)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:  # no `ip` to enter the namespace with: a failed baseline, as data
        result.error = f"iperf3 server on {dst.name} could not be started: {exc}"
        return
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
                return
            time.sleep(0.1)
        argv = iperf3_client_argv(dst.address, port, bind=src.address, **options)
        client = subprocess.run(
            _in(src, *argv), capture_output=True, text=True, timeout=_timeout(options), check=False
        )
        _read_report(client.stdout, client.stderr, result)
    except subprocess.TimeoutExpired:
        result.error = f"iperf3 {src.name} -> {dst.name} did not finish in {_timeout(options)} s"
    finally:
        server.kill()
        server.wait()


def _read_report(stdout: str, stderr: str, result: Baseline) -> None:
    """iperf3's JSON report into `result`: the receiver's rate after the omitted seconds
    (iperf3's end totals leave them out), the sender's retransmits, or why there is none."""
    try:
        report = json.loads(stdout)
    except ValueError:
        result.error = f"iperf3 printed no report: {(stderr or stdout).strip()[:300]}"
        return
    if not isinstance(report, dict):
        result.error = "iperf3's report is not a JSON object"
        return
    if report.get("error"):
        result.error = f"iperf3: {report['error']}"
        return
    end = report.get("end") or {}
    try:
        bits = float(end["sum_received"]["bits_per_second"])
    except (KeyError, TypeError, ValueError):
        result.error = "iperf3's report has no end.sum_received"
        return
    result.throughput_gbps = round(bits / 1e9, 6)
    retransmits = (end.get("sum_sent") or {}).get("retransmits")
    if isinstance(retransmits, int) and retransmits >= 0:  # absent where the OS has no count
        result.retransmits = retransmits

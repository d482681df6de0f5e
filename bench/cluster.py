"""Cluster benchmark (not a test): does the chart on a real cluster measure what the lab does?

A 3-node cluster lab (`lab up --kubernetes`: real kubelets in the lab's namespaces) and a
2-node process lab beside it, both on the same emulated WAN (RTT, link caps, TCP settings).
The chart goes on the cluster with charts/tpc-bench/ci/lab-values.yaml (file size and K set
to the bench's; lab-3 unlabelled, so the servers run on lab-1 and lab-2 only, which are
cordoned so that only the servers run there, with 850m each by default). Then the same
measurement — K concurrent copies of one file lab-1 -> lab-2 with S streams — is made
(a) by the orchestrator pod between the DaemonSet pods (`tpcbench measure --json` exec'd in
its container with explicit endpoints) and (b) by `tpcbench measure` on this machine between
the process lab's servers, interleaved (a, b, a, b ...), REPS times per protocol. Printed:
- the cluster lab's start and `helm install --wait` to every pod Ready, in seconds (no target);
- per repetition both throughputs (the paper's K*S*8/mean duration), both makespan figures and
  the servers' CPU seconds (on the cluster from their containers' cgroups, with the share of
  CFS periods their CPU limit throttled); per protocol the ratio cluster/lab of the medians
  (target >= 0.97) and the RTT `tpcbench measure` saw (on the cluster from the orchestrator
  pod: explicit endpoints name no RTT probe, and pod traffic is not delayed);
- the node agents' memory: VmRSS of kubelet, containerd and kube-proxy (each with its
  descendants) per node and the mean, with the release installed; the containerd shims
  (one per pod, re-parented away from containerd) beside them.

    .venv/bin/python bench/cluster.py [--reps 5] [--file-size 512MiB] [--transfers 1]
                                      [--streams 1] [--protocols https,gridftp]
                                      [--rtt uniform:20ms] [--rate-gbit 1] [--server-cpu 850m]

Both labs are started and stopped here (cluster: prefix `tpcbc`, 10.99.165+; process lab:
prefix `tpcbcp`, 10.99.150+); exits 1 if a protocol misses the target or a measurement fails.
About 3-5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cluster_release import (
    CLUSTER_NETWORK,
    HELM,
    NODE_LABEL,
    NODES,
    SERVER_CONTAINER,
    CpuFigures,
    agent_memory,
    cgroup_cpu,
    children_map,
    cluster_lab,
    component,
    cpu_limit,
    dn_template,
    in_cluster,
    install,
    measure_args,
    parse_record,
    progress,
    release_pods,
    report_memory,
    server_cgroups,
    tree_cpu_seconds,
)
from kubernetes import client

from ca.authority import CertificateAuthority
from orchestrator.lab.kube.cluster_lab import api_client
from orchestrator.lab.lifecycle import run_record_path, start_lab, stop_lab
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.sizes import format_size, parse_size

TARGET = 0.97
PROCESS_NETWORK = LabNetwork(prefix="tpcbcp", subnet_offset=150)  # nodes 10.99.151-152.2
SIDES = ("cluster", "lab")


Meter = Callable[[str], CpuFigures]  # protocol -> its servers' CPU so far, per node


def throttled_share(before: tuple[float, int, int], after: tuple[float, int, int]) -> float:
    periods = after[1] - before[1]
    return (after[2] - before[2]) / periods if periods > 0 else 0.0


@dataclass
class Case:
    protocol: str
    # per side, per repetition: Gbit/s and the measured RTT (None: the measurement failed)
    gbps: dict[str, list[float | None]] = field(default_factory=lambda: {s: [] for s in SIDES})
    makespan: dict[str, list[float | None]] = field(default_factory=lambda: {s: [] for s in SIDES})
    rtt_ms: dict[str, list[float | None]] = field(default_factory=lambda: {s: [] for s in SIDES})
    # per side, per repetition: the servers' CPU seconds and share of CFS periods throttled
    cpu: dict[str, list[dict]] = field(default_factory=lambda: {s: [] for s in SIDES})
    failures: list[str] = field(default_factory=list)

    def add(self, side: str, rep: int, measure: Callable[[str], dict], meter: Meter) -> None:
        before = meter(self.protocol)
        try:
            record = measure(self.protocol)
        except Exception as exc:  # reported with the figures, not fatal
            self.failures.append(f"rep {rep + 1} {side}: {exc}"[:600])
            record = {"throughput_gbps": None, "makespan_gbps": None, "rtt_ms": None}
        after = meter(self.protocol)
        self.gbps[side].append(record["throughput_gbps"])
        self.makespan[side].append(record["makespan_gbps"])
        self.rtt_ms[side].append(record["rtt_ms"])
        self.cpu[side].append(
            {
                node: (used - before[node][0], throttled_share(before[node], (used, p, t)))
                for node, (used, p, t) in after.items()
                if node in before
            }
        )

    def median(self, side: str) -> float:
        values = [v for v in self.gbps[side] if v is not None]
        return statistics.median(values) if values else 0.0

    @property
    def ratio(self) -> float:
        lab = self.median("lab")
        return self.median("cluster") / lab if lab > 0 else 0.0


@contextlib.contextmanager
def process_lab(args: argparse.Namespace) -> Iterator[Path]:
    """The process lab (servers as processes) on the same WAN, in a home under /dev/shm."""
    home = Path(tempfile.mkdtemp(prefix="tpcbench-cluster-bench-lab-", dir="/dev/shm"))
    home.chmod(0o755)  # the lab's server account must reach it
    try:
        CertificateAuthority.init(home / "ca")
        start_lab(
            home, 2, args.file_size, mode=NETNS, network=PROCESS_NETWORK,
            rate_gbit=args.rate_gbit or None, rtt=args.rtt,
        )  # fmt: skip
        try:
            yield home
        finally:
            progress("taking the process lab down")
            stop_lab(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def lab_server_cpu(home: Path, protocol: str) -> CpuFigures:
    """The process lab's servers of `protocol`: CPU so far per node (no limit: no periods)."""
    servers = LabRun.load(run_record_path(home)).processes
    children = children_map()
    name = SERVER_CONTAINER[protocol]
    return {p.node: (tree_cpu_seconds(p.pid, children), 0, 0) for p in servers if p.service == name}


def in_lab(home: Path, protocol: str, args: argparse.Namespace) -> dict:
    """`tpcbench measure` on this machine, between the process lab's servers."""
    argv = [str(Path(sys.executable).with_name("tpcbench")), *measure_args(protocol, args)]
    result = subprocess.run(
        [*argv, "--src", "lab-1", "--dst", "lab-2"], capture_output=True, text=True,
        env={**os.environ, "TPCBENCH_HOME": str(home)}, timeout=args.timeout * 2 + 60, check=False,
    )  # fmt: skip
    return parse_record("lab", protocol, result.returncode, result.stdout, result.stderr)


# -- the bench -------------------------------------------------------------------------------------


@dataclass
class Results:
    cases: list[Case]
    timings: dict[str, float] = field(default_factory=dict)  # what -> seconds
    memory: dict = field(default_factory=dict)  # node -> agent -> (KiB, descendants)
    setup: list[str] = field(default_factory=list)  # where the orchestrator ran, CPU limits


def bench(args: argparse.Namespace, results: Results) -> None:
    """Fills `results` as it goes: what was measured survives a failure further on."""
    with contextlib.ExitStack() as labs:
        progress(
            f"starting a {NODES}-node cluster lab ({CLUSTER_NETWORK.prefix}), WAN {args.rtt}, "
            f"links {args.rate_gbit:g} Gbit/s"
        )
        begin = time.monotonic()
        home = labs.enter_context(cluster_lab(args))
        results.timings["lab up --kubernetes"] = time.monotonic() - begin
        core = client.CoreV1Api(api_client(LabRun.load(run_record_path(home))))
        # lab-3 unlabelled: no servers; lab-1 and lab-2 cordoned: nothing but the servers'
        # DaemonSet pods (which tolerate it), so each server may have most of a node's CPU
        core.patch_node("lab-3", {"metadata": {"labels": {NODE_LABEL: None}}})
        for name in ("lab-1", "lab-2"):
            core.patch_node(name, {"spec": {"unschedulable": True}})
        progress(f"cluster up in {time.monotonic() - begin:.0f} s; helm install --wait")
        seconds = results.timings["helm install --wait, every pod Ready"] = install(
            home, args, core
        )
        pods = release_pods(core)
        orchestrator = next(p for p in pods if component(p) == "orchestrator")
        dn = dn_template(pods)
        cgroups = {p: server_cgroups(pods, p) for p in args.protocols}
        results.setup.append(f"orchestrator pod on {orchestrator.spec.node_name}")
        for protocol, found in cgroups.items():
            limits = ", ".join(f"{n} {cpu_limit(c):g}" for n, c in sorted(found.items()))
            results.setup.append(f"{SERVER_CONTAINER[protocol]} containers' CPU limit: {limits}")
        progress(f"release Ready in {seconds:.0f} s; {'; '.join(results.setup)}")
        progress(f"starting the process lab ({PROCESS_NETWORK.prefix})")
        lab_home = labs.enter_context(process_lab(args))
        measure = {
            "cluster": lambda p: in_cluster(core, orchestrator.metadata.name, dn, p, args),
            "lab": lambda p: in_lab(lab_home, p, args),
        }
        meters: dict[str, Meter] = {
            "cluster": lambda p: cgroup_cpu(cgroups[p]),
            "lab": lambda p: lab_server_cpu(lab_home, p),
        }
        for rep in range(args.reps):
            for case in results.cases:
                for side in SIDES:  # interleaved: cluster, lab, cluster, lab ...
                    case.add(side, rep, measure[side], meters[side])
                    gbps = case.gbps[side][-1]
                    outcome = f"{gbps:.3f} Gbit/s" if gbps is not None else "FAILED"
                    progress(f"rep {rep + 1}/{args.reps} {case.protocol} {side}: {outcome}")
        progress("node agents' memory, release installed")
        results.memory = agent_memory(home)


def shown(value: float | None, digits: int = 3) -> str:
    return "failed" if value is None else f"{value:.{digits}f}"


def server_cpu(figures: dict, throttling: bool) -> str:
    """lab-1/lab-2 CPU seconds (and the share of CFS periods throttled, under a limit)."""
    if not figures:
        return "n/a"
    used = "/".join(f"{figures[n][0]:.1f}" for n in sorted(figures))
    share = "/".join(f"{figures[n][1]:.0%}" for n in sorted(figures))
    return f"{used} ({share})" if throttling else used


def report_throughput(cases: list[Case]) -> bool:
    print("throughput: the paper's K*S*8/mean duration; makespan: K*S*8/(last end - first start)")
    print("server CPU: seconds of the source/destination server (its container, on the cluster;")
    print("  in brackets the share of 100 ms CFS periods its CPU limit throttled)")
    row = "{:<8} {:>3} {:>9} {:>9} {:>6} {:>11} {:>11} {:>6} {:>18} {:>11}"
    print(row.format("protocol", "rep", "cluster", "lab", "ratio", "cl makespan", "lab makesp",
                     "ratio", "cl server CPU s", "lab srv CPU"))  # fmt: skip
    for case in cases:
        for rep in range(len(case.gbps["cluster"])):
            cluster, lab = (case.gbps[s][rep] for s in SIDES)
            c_span, l_span = (case.makespan[s][rep] for s in SIDES)
            print(row.format(
                case.protocol, rep + 1, shown(cluster), shown(lab),
                shown(cluster / lab if cluster and lab else None),
                shown(c_span), shown(l_span), shown(c_span / l_span if c_span and l_span else None),
                server_cpu(case.cpu["cluster"][rep], True), server_cpu(case.cpu["lab"][rep], False),
            ))  # fmt: skip
    print(f"target: median cluster / median lab >= {TARGET} (Gbit/s)")
    row = "{:<8} {:>15} {:>11} {:>7} {:>4} {:>26}"
    print(
        row.format(
            "protocol", "cluster median", "lab median", "ratio", "ok", "RTT ms cluster / lab"
        )
    )
    ok = True
    for case in cases:
        good = not case.failures and case.ratio >= TARGET
        ok &= good
        rtts = [[r for r in case.rtt_ms[s] if r is not None] for s in SIDES]
        rtt = " / ".join(shown(statistics.median(r) if r else None, 1) for r in rtts)
        print(row.format(case.protocol, f"{case.median('cluster'):.3f}",
                         f"{case.median('lab'):.3f}", f"{case.ratio:.3f}",
                         "yes" if good else "NO", rtt))  # fmt: skip
        for failure in case.failures[:3]:
            print(f"    failed: {failure}")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    # One transfer by default: with K flows sharing a link, how unevenly TCP lets them finish
    # moves the paper's figure (K*S*8/mean duration) by +-15% a run, on both sides alike;
    # one flow measures what differs, the way the servers run.
    parser.add_argument("--transfers", type=int, default=1, help="K (default 1)")
    parser.add_argument("--file-size", type=parse_size, default=parse_size("512MiB"))
    parser.add_argument("--streams", type=int, default=1, help="TCP streams per transfer")
    parser.add_argument(
        "--protocols", default="https,gridftp", help="comma-separated (default https,gridftp)"
    )
    parser.add_argument("--rtt", default="uniform:20ms", help="the WAN of both labs")
    # Link-bound, not CPU-bound: on a shared 2-core machine unshaped transfers measure CPU
    # contention (two labs, a control plane, kubelets) more than the two ways of measuring.
    parser.add_argument(
        "--rate-gbit", type=float, default=1.0, help="link cap of both labs (0: unshaped)"
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="s per transfer")
    # The process lab's servers have no CPU limit; a limit the servers reach in bursts
    # throttles them (250m: a third of their periods). 850m each fills a 2-core node with
    # the two server pods and their sidecars, which the cordon leaves alone there.
    parser.add_argument(
        "--server-cpu",
        default="850m",
        help="the server containers' CPU (servers.cpu; default 850m; '' for the lab values')",
    )
    args = parser.parse_args(argv)
    args.protocols = [p for p in args.protocols.split(",") if p]
    if args.reps < 1 or args.transfers < 1 or args.streams < 1:
        parser.error("--reps, --transfers and --streams must be at least 1")
    if not set(args.protocols) <= {"https", "gridftp"} or not args.protocols:
        parser.error("--protocols: https and/or gridftp")
    if os.geteuid() != 0:
        print("bench/cluster.py needs root (network namespaces, kubelets)", file=sys.stderr)
        return 1
    if not HELM.exists():
        print(f"bench/cluster.py needs helm at {HELM}: make helm", file=sys.stderr)
        return 1
    begin = time.monotonic()
    results = Results([Case(p) for p in args.protocols])
    try:
        bench(args, results)
        failure = None
    except Exception as exc:  # the figures so far are still printed, then the failure
        failure = exc
        traceback.print_exc()
    rate = f"{args.rate_gbit:g} Gbit/s" if args.rate_gbit else "unshaped"
    print(
        f"cluster: {args.transfers} x {format_size(args.file_size)} lab-1 -> lab-2, "
        f"{args.streams} stream(s), WAN {args.rtt}, links {rate}, {args.reps} interleaved "
        "repetitions; cluster: tpcbench measure in the orchestrator pod of the chart (lab "
        f"values{', servers.cpu=' + args.server_cpu if args.server_cpu else ''}); lab: process "
        "runtime, tpcbench measure on this machine"
    )
    for line in results.setup:
        print(f"  {line}")
    for what, seconds in results.timings.items():
        print(f"  {what}: {seconds:.1f} s (report only)")
    ok = report_throughput(results.cases)
    if results.memory:
        report_memory(results.memory)
    if failure is not None:
        print(f"cluster: FAILED: {type(failure).__name__}: {str(failure)[:500]}")
    ok = ok and failure is None
    print(f"cluster: {'the target was met' if ok else 'a target missed or a measurement failed'}")
    print(f"cluster: {time.monotonic() - begin:.0f} s in all")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""The cluster side of bench/cluster.py: a cluster lab, the chart installed on it, a
measurement made by the orchestrator pod, and the memory of each node's agents."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from kubernetes import client
from kubernetes.stream import stream

from orchestrator.lab.cluster_lifecycle import start_cluster_lab
from orchestrator.lab.kube.cluster_lab import kubeconfig_path, layouts
from orchestrator.lab.kube.node_agents import shims_of
from orchestrator.lab.lifecycle import run_record_path, stop_lab
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import NETNS, LabNetwork, plan_nodes

REPO = Path(__file__).resolve().parents[1]
CLUSTER_NETWORK = LabNetwork(prefix="tpcbc", subnet_offset=165)  # nodes 10.99.166-168.2
NODES = 3
CHART = REPO / "charts" / "tpc-bench"
LAB_VALUES = CHART / "ci" / "lab-values.yaml"
HELM = Path(os.environ.get("TPCBENCH_HELM_CACHE") or "/var/cache/tpc-bench/helm/bin") / "helm"
NAMESPACE, RELEASE = "tpc", "bench"
CREDENTIALS = "/etc/grid-security/tpc-bench"
AGENTS = ("kubelet", "containerd", "kube-proxy")
NODE_LABEL = "tpc-bench.io/network"


def progress(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def cluster_lab(args: argparse.Namespace) -> Iterator[Path]:
    """A cluster lab in a home of its own (its containerd roots hold every image: on disk, not
    in /dev/shm), taken down and removed afterwards. A failed `lab down` is reported and
    tried once more (it is idempotent); the bench then still fails with the first error."""
    home = Path(tempfile.mkdtemp(prefix="tpcbench-cluster-bench-"))
    try:
        start_cluster_lab(
            home, NODES, network=CLUSTER_NETWORK, rtt=args.rtt, rate_gbit=args.rate_gbit or None
        )
        yield home
    finally:
        progress("taking the cluster lab down")
        try:
            stop_lab(home)
        except Exception as exc:
            progress(f"lab down FAILED: {type(exc).__name__}: {exc}; once more")
            stop_lab(home)  # if this fails too, the home stays for `tpcbench lab down`
            progress("lab down: the second attempt finished the job")
            shutil.rmtree(home, ignore_errors=True)
            raise
        shutil.rmtree(home, ignore_errors=True)


def helm(home: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig_path(LabRun.load(run_record_path(home))))}
    for kind in ("CACHE", "CONFIG", "DATA"):  # helm's own state, not the user's
        env[f"HELM_{kind}_HOME"] = str(home / "helm" / kind.lower())
    result = subprocess.run(
        [str(HELM), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"helm {args[0]} failed: {result.stdout[-1500:]}{result.stderr[-1500:]}")
    return result


def release_pods(core: client.CoreV1Api) -> list[client.V1Pod]:
    selector = f"app.kubernetes.io/instance={RELEASE}"
    found = core.list_namespaced_pod(NAMESPACE, label_selector=selector).items
    return [p for p in found if p.metadata.deletion_timestamp is None]


def component(pod: client.V1Pod) -> str:
    return pod.metadata.labels.get("app.kubernetes.io/component", "")


def dn_template(pods: list[client.V1Pod]) -> str:
    """The servers' host DN with {node} for the node, as the orchestrator's discovery reads it."""
    server = next(p for p in pods if component(p) == "gridftp")
    return server.metadata.annotations["tpc-bench/host-dn-template"]


def all_ready(pod: client.V1Pod) -> bool:
    statuses = pod.status.container_statuses or []
    return pod.status.phase == "Running" and bool(statuses) and all(s.ready for s in statuses)


def install(home: Path, args: argparse.Namespace, core: client.CoreV1Api) -> float:
    """`helm install --wait` of the chart with the lab values, then every pod Ready: seconds."""
    begin = time.monotonic()
    helm(
        home, "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
        "--values", str(LAB_VALUES), "--set-string", f"campaign.fileSize={args.file_size}",
        "--set", f"campaign.transfers={args.transfers}", "--wait", "--timeout", "10m",
        *(["--set-string", f"servers.cpu={args.server_cpu}"] if args.server_cpu else []),
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (pods := release_pods(core)) or not all(all_ready(p) for p in pods):
        if time.monotonic() > deadline:
            late = [p.metadata.name for p in pods if not all_ready(p)]
            raise RuntimeError(f"helm install --wait returned, but pods not Ready: {late}")
        time.sleep(1)
    return time.monotonic() - begin


def node_address(network: LabNetwork, node: str) -> str:
    return next(p.address for p in plan_nodes(NODES, NETNS, network) if p.name == node)


def measure_args(protocol: str, args: argparse.Namespace) -> list[str]:
    return [
        "measure", "--json", "--protocol", protocol, "--streams", str(args.streams),
        "--transfers", str(args.transfers), "--file-size", str(args.file_size),
        "--timeout", str(args.timeout),
    ]  # fmt: skip


def parse_record(side: str, protocol: str, rc: int | None, out: str, err: str) -> dict:
    try:
        record = json.loads(out)
    except ValueError:
        raise RuntimeError(f"{side} {protocol}: rc={rc}, no JSON: {(out + err)[-600:]}") from None
    if record.get("failed") or record.get("throughput_gbps") is None:
        failures = [t.get("message", "") for t in record["transfers"] if t.get("error_class")]
        raise RuntimeError(f"{side} {protocol}: {record['failed']} failed: {failures[:2]}")
    return record


def in_cluster(
    core: client.CoreV1Api, pod: str, dn: str, protocol: str, args: argparse.Namespace
) -> dict:
    """`tpcbench measure` in the orchestrator container, between the DaemonSet pods."""
    argv = ["tpcbench", *measure_args(protocol, args)]
    for flag, node in (("src", "lab-1"), ("dst", "lab-2")):
        argv += [f"--{flag}", node_address(CLUSTER_NETWORK, node)]
        argv += [f"--{flag}-dn", dn.replace("{node}", node)]
    argv += ["--cert", f"{CREDENTIALS}/usercert.pem", "--key", f"{CREDENTIALS}/userkey.pem"]
    argv += ["--certdir", "/etc/grid-security/certificates", "--data-root", "/data"]
    exec_ = stream(
        core.connect_get_namespaced_pod_exec, pod, NAMESPACE, container="orchestrator",
        command=argv, stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False,
    )  # fmt: skip
    try:
        exec_.run_forever(timeout=args.timeout * 2 + 60)
        out, err, rc = exec_.read_stdout(), exec_.read_stderr(), exec_.returncode
    finally:
        exec_.close()
    return parse_record("cluster", protocol, rc, out, err)


# -- the servers' CPU -----------------------------------------------------------------------------

CGROUP_FS = Path("/sys/fs/cgroup")
SERVER_CONTAINER = {"https": "xrootd", "gridftp": "gridftp"}
CpuFigures = dict[str, tuple[float, int, int]]  # node -> (CPU s, CFS periods, throttled ones)


def server_cgroups(pods: list[client.V1Pod], protocol: str) -> dict[str, Path]:
    """node -> the cgroup (below each v1 hierarchy) of the protocol's server container."""
    name, found = SERVER_CONTAINER[protocol], {}
    for pod in pods:
        status = next((s for s in pod.status.container_statuses or [] if s.name == name), None)
        if component(pod) != name or status is None or not status.container_id:
            continue
        root = f"tpcbench-{CLUSTER_NETWORK.prefix}-{pod.spec.node_name}/kubepods"
        container = status.container_id.rpartition("://")[2]
        match = next((CGROUP_FS / "cpu" / root).rglob(container), None)
        if match is not None:
            found[pod.spec.node_name] = match.relative_to(CGROUP_FS / "cpu")
    return found


def cgroup_cpu(cgroups: dict[str, Path]) -> CpuFigures:
    """What each container has used so far, and how often its CPU limit held it back."""
    figures = {}
    for node, cgroup in cgroups.items():
        stat = (CGROUP_FS / "cpu" / cgroup / "cpu.stat").read_text().split()
        fields = dict(zip(stat[::2], map(int, stat[1::2]), strict=True))
        used = int((CGROUP_FS / "cpuacct" / cgroup / "cpuacct.usage").read_text()) / 1e9
        figures[node] = (used, fields["nr_periods"], fields["nr_throttled"])
    return figures


def cpu_limit(cgroup: Path) -> float:
    quota = int((CGROUP_FS / "cpu" / cgroup / "cpu.cfs_quota_us").read_text())
    return quota / int((CGROUP_FS / "cpu" / cgroup / "cpu.cfs_period_us").read_text())


def tree_cpu_seconds(pid: int, children: dict[int, list[int]]) -> float:
    """User + system CPU of pid and its live descendants, and of the children they reaped."""
    pending, ticks = [pid], 0
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        pending.extend(children.get(current, []))
    return ticks / os.sysconf("SC_CLK_TCK")


# -- the node agents' memory -----------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0  # gone, or a kernel thread


def children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree_rss_kib(pid: int, children: dict[int, list[int]]) -> tuple[int, int]:
    """(VmRSS of pid and its descendants, how many descendants)."""
    pending, total, count = [pid], 0, -1
    while pending:
        current = pending.pop()
        total += rss_kib(current)
        count += 1
        pending.extend(children.get(current, []))
    return total, count


def agent_memory(home: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """node -> {agent: (KiB, descendants), "shims": (KiB, how many)}."""
    record = LabRun.load(run_record_path(home))
    assert record.cluster is not None
    children = children_map()
    found: dict[str, dict[str, tuple[int, int]]] = {}
    for agent in record.cluster.agents:
        found.setdefault(agent.node, {})[agent.service] = tree_rss_kib(agent.pid, children)
    for layout in layouts(record, plan_nodes(NODES, NETNS, record.network)):
        shims = shims_of(layout.containerd_socket)
        found[layout.plan.name]["shims"] = (sum(rss_kib(p) for p in shims), len(shims))
    return found


def report_memory(memory: dict[str, dict[str, tuple[int, int]]]) -> None:
    print("node agents' memory, release installed: VmRSS MiB, each agent with its descendants "
          "(shims: the containerd shims of the node's pods, outside the total)")  # fmt: skip
    row = "{:<8} {:>9} {:>11} {:>11} {:>8} {:>14}"
    print(row.format("node", *AGENTS, "total", "shims (count)"))
    columns = [*AGENTS, "total", "shims"]
    table = {
        node: {**{a: found[a][0] for a in AGENTS}, "total": sum(found[a][0] for a in AGENTS),
               "shims": found["shims"][0]}
        for node, found in sorted(memory.items())
    }  # fmt: skip
    for node, kib in table.items():
        shims = f"{kib['shims'] / 1024:.1f} ({memory[node]['shims'][1]})"
        print(row.format(node, *(f"{kib[c] / 1024:.1f}" for c in columns[:-1]), shims))
    means = [statistics.mean(t[c] for t in table.values()) / 1024 for c in columns]
    print(row.format("mean", *(f"{m:.1f}" for m in means)))
    descendants = {a: [memory[n][a][1] for n in sorted(memory)] for a in AGENTS}
    print(f"  descendants counted per node: {descendants}")

"""The lab's WAN, applied in the router namespace: the delay program and its NFQUEUE rules.

Every ordered node pair (a, b) with an RTT target above 0 gets NFQUEUE queue 100a+b: a rule in
the router's FORWARD path (chain TPCBENCH-WAN) sends a's packets for b into it, and one delay
program (orchestrator/lab/delayline, built by `make delayline`) holds each packet for half the
pair's RTT. The rules have no --queue-bypass: while the program is not running the kernel
drops the traffic between nodes (fail closed) rather than passing it undelayed, and
`lab status` says so. Traffic from the host (the orchestrator's control connections) is not
delayed. Link caps are tbf on the router's egress towards each node (network.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orchestrator.lab.processes as processes
from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.network import in_namespace, run
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import LabNetwork, NodePlan
from orchestrator.lab.wan_profile import RttMatrix, TcpSettings
from orchestrator.latency import measure_rtt
from orchestrator.latency.target import rtt_within_target
from orchestrator.transfers.record import iso

DELAYLINE_ENV = "TPCBENCH_DELAYLINE"  # the program to run, if not the one `make` builds
DEFAULT_DELAYLINE = Path("/var/cache/tpc-bench/delayline/bin/delayline")
CHAIN = "TPCBENCH-WAN"
READY_TIMEOUT = 10.0
STATS_STALE_SECONDS = 5.0  # the program rewrites its stats every second
RTT_SAMPLES = 5
RTT_CONCURRENCY = 2  # more at once and the probes' own start-up shows in their RTTs
DEAD_MESSAGE = (
    "the WAN delay program (pid {pid}) is not running: traffic between lab nodes is dropped "
    "(fail closed); restart the lab with: tpcbench lab down, then tpcbench lab up again"
)


def queue_number(src: NodePlan, dst: NodePlan) -> int:
    """The NFQUEUE queue of the ordered pair src -> dst: 102 is lab-1 -> lab-2."""
    return src.index * 100 + dst.index


def delayline_program() -> Path:
    path = Path(os.environ.get(DELAYLINE_ENV) or DEFAULT_DELAYLINE)
    if not os.access(path, os.X_OK):
        raise UserError(
            f"the WAN delay program {path} is not built; build it with: make delayline "
            "(or: scripts/delayline/build.sh)"
        )
    return path


def check_wan_tools() -> None:
    if shutil.which("iptables-restore") is None:
        raise UserError(
            "--rtt needs iptables (NFQUEUE rules); install it with: make system-deps "
            "(or: apt-get install iptables)"
        )
    delayline_program()


def stats_path(record: LabRun) -> Path:
    return Path(record.path).parent / "delayline.json"


def delay_queues(plans: Sequence[NodePlan], matrix: RttMatrix) -> dict[int, float]:
    """queue number -> one-way delay in ms (half the RTT), for every pair with an RTT."""
    return {
        queue_number(a, b): matrix.target(a.name, b.name) / 2
        for a in plans
        for b in plans
        if a is not b and matrix.target(a.name, b.name) > 0
    }


def start_wan(
    record: LabRun, plans: Sequence[NodePlan], network: LabNetwork, matrix: RttMatrix
) -> None:
    """Start the delay program in the router, wait until it holds its queues, add the rules."""
    queues = delay_queues(plans, matrix)
    rules = [
        (a.address + "/32", b.address + "/32", queue_number(a, b))
        for a in plans
        for b in plans
        if a is not b and queue_number(a, b) in queues
    ]
    start_delay_line(record, network, queues, rules)


def start_delay_line(
    record: LabRun, network: LabNetwork, queues: dict[int, float], rules: list[tuple[str, str, int]]
) -> None:
    """The delay program holding `queues` (number -> one-way ms) and the NFQUEUE rules
    (source, destination, queue) sending the router's forwarded packets into them."""
    if not queues:
        return  # every RTT is 0: nothing to delay
    program = delayline_program()
    stats = stats_path(record)
    stats.unlink(missing_ok=True)
    argv = in_namespace(network.router_namespace, str(program), "-stats", str(stats))
    for queue, delay_ms in sorted(queues.items()):
        argv += ["-queue", f"{queue}={round(delay_ms * 1000)}us"]
    log = Path(record.path).parent / "delayline.log"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    process = processes.spawn("router", "delayline", argv, env=env, log=log, cwd=log.parent)
    record.delay_line = process
    record.save()
    _wait_until_bound(process, stats, log)
    lines = ["*filter", f":{CHAIN} - [0:0]", f"-A FORWARD -j {CHAIN}"]
    lines += [f"-A {CHAIN} -s {src} -d {dst} -j NFQUEUE --queue-num {q}" for src, dst, q in rules]
    lines.append("COMMIT")
    argv = in_namespace(network.router_namespace, "iptables-restore", "--noflush")
    done = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise UserError(f"iptables-restore in the router failed: {detail[-1] if detail else '?'}")


def _wait_until_bound(process: processes.ServerProcess, stats: Path, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while not _read_stats(stats):
        if not processes.is_alive(process):
            lines = log.read_text().strip().splitlines() if log.exists() else []
            last = lines[-1] if lines else "no output"
            raise UserError(f"the WAN delay program stopped during start-up: {last} (log: {log})")
        if time.monotonic() > deadline:
            raise UserError(f"the WAN delay program did not start within {READY_TIMEOUT:.0f}s")
        time.sleep(0.05)


def _read_stats(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def stop_wan(record: LabRun) -> tuple[list[str], list[str]]:
    """Stop the delay program (the rules go with the router namespace): (done, problems)."""
    process = record.delay_line
    if process is None:
        return [], []
    if not processes.is_alive(process):
        stats_path(record).unlink(missing_ok=True)
        return [f"the WAN delay program (pid {process.pid}) had already stopped"], []
    survivors = processes.stop(process)
    stats_path(record).unlink(missing_ok=True)
    if survivors:
        return [], [f"WAN delay program: pids {survivors} remain"]
    return [f"stopped the WAN delay program (pid {process.pid})"], []


def delay_line_status(record: LabRun) -> dict[str, Any]:
    """{"state": "off" | "running" | "stalled" | "dead", ...}: is the delay really applied?"""
    process = record.delay_line
    if process is None:
        return {"state": "off"}
    if not processes.is_alive(process):
        message = DEAD_MESSAGE.format(pid=process.pid)
        return {"state": "dead", "pid": process.pid, "message": message}
    stats = _read_stats(stats_path(record)) or {}
    status: dict[str, Any] = {"state": "running", "pid": process.pid}
    age = time.time() - float(stats.get("updated", 0))
    if age > STATS_STALE_SECONDS:
        status["state"] = "stalled"
        status["message"] = (
            f"the WAN delay program (pid {process.pid}) has not reported for {age:.0f}s; "
            "lab traffic may be held; restart the lab"
        )
    queues = stats.get("queues") or []
    status.update(
        queues=len(queues),
        packets=sum(q.get("packets", 0) for q in queues),
        held=sum(q.get("held", 0) for q in queues),
        kernel_timestamps=stats.get("kernel_timestamps"),
        late_mean_us=stats.get("late_mean_us"),
        late_max_us=stats.get("late_max_ever_us"),
    )
    return status


def read_tcp_settings(netns: str) -> dict[str, str]:
    """What a node's namespace really uses (read back, not what we meant to set)."""
    keys = list(TcpSettings().sysctls())
    values = run(in_namespace(netns, "sysctl", "-n", *keys)).splitlines()
    return {
        key.rsplit(".", 1)[-1]: " ".join(value.split())
        for key, value in zip(keys, values, strict=False)
    }


def measure_pair_rtts(
    endpoints: Sequence[Endpoint], samples: int = RTT_SAMPLES
) -> dict[tuple[str, str], float | None]:
    """Median TCP-connect RTT of every ordered pair, each from its source's position; a pair
    off its target (latency.target) is measured once more, so a moment's CPU contention on a
    small machine is not reported as a WAN that is off."""

    async def all_pairs(pairs: list[tuple[Endpoint, Endpoint]]) -> list[float | None]:
        slots = asyncio.Semaphore(RTT_CONCURRENCY)

        async def one(src: Endpoint, dst: Endpoint) -> float | None:
            async with slots:
                return await measure_rtt(src, dst, dst.ports["https"], count=samples)

        return await asyncio.gather(*(one(s, d) for s, d in pairs))

    pairs = [(s, d) for s in endpoints for d in endpoints if s is not d]
    results = asyncio.run(all_pairs(pairs))
    again = [
        i
        for i, ((s, d), rtt) in enumerate(zip(pairs, results, strict=True))
        if rtt_within_target(rtt, s.rtt_targets_ms.get(d.name)) is False
    ]
    if again:
        for i, rtt in zip(again, asyncio.run(all_pairs([pairs[i] for i in again])), strict=True):
            results[i] = rtt
    return {(s.name, d.name): rtt for (s, d), rtt in zip(pairs, results, strict=True)}


def refresh_wan(inventory: LabInventory, record: LabRun) -> LabInventory:
    """The inventory with what is true now: each node's TCP settings, the delay program's
    state and, when the lab emulates a WAN, every pair's RTT measured again."""
    tcp = {e.name: read_tcp_settings(e.netns) for e in inventory.nodes if e.netns}
    wan = dict(inventory.wan)
    measured = inventory.rtt_measured
    if any(e.rtt_targets_ms for e in inventory.nodes):
        if delay_line_status(record)["state"] == "dead":  # connects would time out: say why
            measured = {e.name: {} for e in inventory.nodes}
        else:
            found = measure_pair_rtts(inventory.nodes)
            measured = {e.name: {} for e in inventory.nodes}
            for (src, dst), rtt in found.items():
                measured[src][dst] = rtt
            wan["rtt_measured_at"] = iso(datetime.now(UTC))
    wan["delay_line"] = delay_line_status(record)  # after the RTTs: their packets counted
    return replace(inventory, tcp=tcp, wan=wan, rtt_measured=measured)


def require_delay_line(inventory_file: Path) -> None:
    """Before a campaign on a lab: refuse to start while its WAN delay program is dead (every
    pair would time out, slowly); a lab without an emulated WAN passes."""
    record_file = inventory_file.with_name("run.json")
    if not record_file.exists():
        return
    status = delay_line_status(LabRun.load(record_file))
    if status["state"] == "dead":
        raise UserError(status["message"])

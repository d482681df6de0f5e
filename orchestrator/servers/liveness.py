"""When a server must restart to load its renewed host certificate, and when it must wait.

xrootd 5.5 and globus-gridftp-server 13 read their host certificate only at start. The
renewal sidecar replaces the file when a third of its life is left; the server's liveness
check (`python -m orchestrator.servers check --credentials ...`) then fails, so the kubelet
restarts the server. A restart in the middle of a measurement would cut its transfers, so the
check fails for a renewed certificate only once the server has been idle for a quiet period,
or once the renewed certificate has waited the longest it may (a connection open that long is
stuck, not a measurement). Idle: no check saw an established TCP connection on the server's
ports, and no name was created or deleted in its data area (every measurement writes and
deletes its destination names there), a trace of the transfers that began and ended between
two checks.

The pods are on the host network, so the connections are the node's: /proc/net/tcp{,6} of
the check's own network namespace, which is the server's.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

ESTABLISHED = "01"  # the `st` column of /proc/net/tcp{,6}
PROC_NET = Path("/proc/net")


def established_local_ports(proc_net: Path = PROC_NET) -> set[int]:
    """The local ports of every established TCP connection (IPv4 and IPv6) in this network
    namespace: a server's side of a connection has the server's port as its local port."""
    ports: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc_net / table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue  # a kernel without IPv6
        for line in lines:
            fields = line.split()  # sl local_address rem_address st ...
            if len(fields) > 3 and fields[3] == ESTABLISHED:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def process_start_time(pid: int) -> float:
    """When process `pid` started (Unix time): boot time plus its start ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
    boot = next(
        int(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )
    return boot + ticks / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class RenewalPolicy:
    """How long a server waits before it restarts for a renewed certificate (seconds)."""

    quiet_period: float = 600.0  # no connection for this long: between measurements
    max_wait: float = math.inf  # after this long it restarts even with a connection open


@dataclass(frozen=True)
class Observation:
    """What one check sees (Unix times)."""

    now: float
    started: float  # the server's start
    renewed: float  # the certificate file's last change
    last_busy: float  # the last sign of a transfer: a check saw a connection, or the data
    # area's names changed (0: none)
    busy: bool  # a connection is established on the server's ports right now


def restart_reason(seen: Observation, policy: RenewalPolicy) -> str | None:
    """Why the server must restart now, or None while it keeps running."""
    # whole seconds: /proc's start time is coarser than a file's mtime
    if int(seen.renewed) <= int(seen.started) + 1:
        return None
    waited = seen.now - seen.renewed
    if waited >= policy.max_wait:
        return f"renewed {waited:.0f} s ago, the longest a renewal waits ({policy.max_wait:.0f} s)"
    if seen.busy:
        return None
    idle = seen.now - max(seen.renewed, seen.last_busy)
    if idle >= policy.quiet_period:
        return f"renewed {waited:.0f} s ago, and no transfer for {idle:.0f} s"
    return None


def _changed(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _record_busy(state: Path, now: float) -> None:
    try:
        state.touch()
        os.utime(state, (now, now))
    except OSError:
        pass  # never fail a busy server's check for its bookkeeping


def observe(
    cert: Path,
    started_pid: int,
    ports: Collection[int],
    state: Path,
    data_root: Path,
    now: float | None = None,
) -> Observation:
    """The check's view: the server's start, the certificate's change, its connections and
    its data area. A busy server is recorded in `state`, so a later check knows how long it
    has been idle."""
    now = time.time() if now is None else now
    busy = not established_local_ports().isdisjoint(ports)
    if busy:
        _record_busy(state, now)
    return Observation(
        now=now,
        started=process_start_time(started_pid),
        renewed=cert.stat().st_mtime,
        last_busy=now if busy else max(_changed(state), _changed(data_root)),
        busy=busy,
    )

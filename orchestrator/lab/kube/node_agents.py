"""Start and stop one lab node's agents: containerd, kubelet and kube-proxy in its namespace.

They enter the node's network namespace with `nsenter --net` (not `ip netns exec`, which
remounts /sys and hides the cgroup mounts from kubelet), so host-network pods land in that
namespace: a pod's address and ports are the node's. Each node has its own cgroup root in
every v1 hierarchy, its own containerd root, state and socket, and its own kubelet root.

Stopping undoes all of it: the kubelet first (no pod is restarted), then every process left
in the node's cgroups (the pods' containers), containerd and its shims, the mounts under the
node's directories, and the cgroups, deepest first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import orchestrator.lab.processes as processes
from orchestrator.lab.kube import traces
from orchestrator.lab.kube.node_config import NodeLayout
from orchestrator.lab.processes import ServerProcess

CGROUP_FS = Path("/sys/fs/cgroup")
V1_CONTROLLERS = (
    "pids", "cpuset", "memory", "systemd", "cpu", "cpuacct", "devices", "freezer", "blkio",
    "hugetlb", "net_cls", "net_prio", "perf_event",
)  # fmt: skip
AGENT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHIM = "containerd-shim"


def cgroup_dirs(root: str) -> list[Path]:
    """The node's cgroup root in every mounted hierarchy (v1: one per controller)."""
    dirs = []
    for name in V1_CONTROLLERS:
        base = CGROUP_FS / name
        if base.is_dir() and not base.is_symlink():
            dirs.append(base / root.lstrip("/"))
    unified = CGROUP_FS / "unified"
    if unified.is_dir():
        dirs.append(unified / root.lstrip("/"))
    if (CGROUP_FS / "cgroup.controllers").exists():  # a pure v2 machine
        dirs.append(CGROUP_FS / root.lstrip("/"))
    return dirs


def make_cgroups(root: str) -> None:
    """kubelet refuses a cgroup root missing from any hierarchy; cpuset needs its cpus/mems."""
    for folder in cgroup_dirs(root):
        folder.mkdir(parents=True, exist_ok=True)
        if folder.parent.name == "cpuset" or (folder.parent / "cpuset.cpus").exists():
            for name in ("cpuset.cpus", "cpuset.mems"):
                parent_value = (folder.parent / name).read_text().strip()
                if not (folder / name).read_text().strip():
                    (folder / name).write_text(parent_value)


def _subtree(folder: Path) -> list[Path]:
    """`folder` and every cgroup below it, deepest first; cgroups that vanish while we walk
    (a container's, removed by runc at that moment) are simply not there."""
    found = [Path(top) for top, _, _ in os.walk(folder, onerror=lambda _: None)]
    return sorted(found, key=lambda p: -len(p.parts))


def cgroup_pids(root: str) -> set[int]:
    """Every process anywhere below the node's cgroup root."""
    pids: set[int] = set()
    for folder in cgroup_dirs(root):
        for cgroup in _subtree(folder):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(p) for p in (cgroup / "cgroup.procs").read_text().split())
    return pids


def remove_cgroups(root: str) -> list[str]:
    """rmdir the node's cgroups depth-first; what could not be removed."""
    problems = []
    for folder in cgroup_dirs(root):
        for cgroup in _subtree(folder):
            try:
                cgroup.rmdir()
            except FileNotFoundError:
                continue
            except OSError as exc:
                if cgroup == folder:
                    problems.append(f"cgroup {folder}: {exc.strerror}")
    return problems


def spawn_in_namespace(
    node: str, service: str, netns: str, argv: list[str], log: Path
) -> ServerProcess:
    """`argv` inside the node's network namespace, in its own session; recorded by pid.
    The agents stay outside the node's cgroup root, which holds only its pods."""
    prefix = ["nsenter", f"--net=/var/run/netns/{netns}", "--"]
    env = {"PATH": AGENT_PATH, "HOME": str(log.parent), "LANG": "C.UTF-8"}
    return processes.spawn(node, service, [*prefix, *argv], env=env, log=log, cwd=log.parent)


def kill_cgroup(root: str, timeout: float = 15.0) -> list[int]:
    """SIGKILL everything below the node's cgroup root until it is empty; survivors."""
    deadline = time.monotonic() + timeout
    while (pids := cgroup_pids(root) - {os.getpid()}) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    return sorted(cgroup_pids(root))


def shims_of(socket: Path) -> list[int]:
    """containerd shims serving the containerd at `socket` (they outlive containerd)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if argv and SHIM.encode() in argv[0] and str(socket).encode() in argv:
                found.append(int(entry.name))
    return found


def mounts_under(folder: Path) -> list[str]:
    """Mount points at or below `folder`, deepest first (kubelet bind-mounts its own root)."""
    prefix = str(folder)
    points = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))


def unmount_all(folder: Path) -> list[str]:
    problems = []
    for _ in range(3):  # a bind mount may be stacked on itself
        points = mounts_under(folder)
        if not points:
            return []
        for point in points:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    problems.extend(f"mount {p} remains" for p in mounts_under(folder))
    return problems


def stop_node(layout: NodeLayout, agents: list[ServerProcess]) -> tuple[list[str], list[str]]:
    """Stop the node's kubelet, its pods, kube-proxy, containerd and shims; unmount; remove its
    cgroups. Returns (done, problems)."""
    done, problems = [], []
    order = {"kubelet": 0, "kube-proxy": 1, "containerd": 2}
    sandboxes: dict[str, str] = {}
    for agent in sorted(agents, key=lambda a: order.get(a.service, 9)):
        if agent.service == "containerd":
            if processes.is_alive(agent):
                sandboxes = traces.sandboxes(layout)
            survivors = kill_cgroup(layout.cgroup_root)
            if survivors:
                problems.append(f"{layout.plan.name}: pod processes {survivors} survived SIGKILL")
        left = processes.stop(agent)
        if left:
            problems.append(f"{layout.plan.name}: {agent.service} (pid {agent.pid}) survived")
        else:
            done.append(f"stopped {agent.service} on {layout.plan.name}")
    for pid in shims_of(layout.containerd_socket):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    survivors = kill_cgroup(layout.cgroup_root)
    if survivors:
        problems.append(f"{layout.plan.name}: processes {survivors} survived in its cgroups")
    problems.extend(traces.remove(layout, sandboxes))
    problems.extend(unmount_all(layout.root))
    problems.extend(remove_cgroups(layout.cgroup_root))
    return done, problems

"""The machine-wide kernel settings a kubelet changes, recorded first and put back after.

kubelet writes these global sysctls when it starts (`setupKernelTunables`): on our machines
`kernel.panic` 1 -> 10, `kernel.panic_on_oops` 0 -> 1, `vm.overcommit_memory` 0 -> 1. Several
cluster labs may run at once (a demo and a test), so the first lab to start kubelets records
the values in one machine-wide lease and the last one to stop puts them back. The same lease
records which of the fixed directories kubelet, CNI and containerd's shims create outside a
node's own (MACHINE_DIRS) were absent, and the last lab removes those again.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

KUBELET_SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
)
MACHINE_DIRS = ("/var/lib/kubelet", "/var/log/containers", "/var/lib/cni", "/run/containerd")
LEASE = Path(os.environ.get("TPCBENCH_KERNEL_LEASE", "/run/tpc-bench/kubelet-sysctls.json"))


def _proc_path(name: str) -> Path:
    return Path("/proc/sys") / name.replace(".", "/")


def read_settings() -> dict[str, str]:
    return {name: _proc_path(name).read_text().strip() for name in KUBELET_SYSCTLS}


def _write_settings(values: dict[str, str]) -> list[str]:
    problems = []
    for name, value in values.items():
        try:
            _proc_path(name).write_text(value)
        except OSError as exc:
            problems.append(f"{name} could not be put back to {value}: {exc}")
    return problems


@contextmanager
def _locked() -> Iterator[dict]:
    """The lease, read and written under an exclusive lock."""
    LEASE.parent.mkdir(parents=True, exist_ok=True)
    with open(LEASE.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            lease = json.loads(LEASE.read_text())
        except (FileNotFoundError, ValueError):
            lease = {"original": None, "holders": []}
        yield lease
        if lease["holders"]:
            LEASE.write_text(json.dumps(lease, indent=2) + "\n")
        else:
            LEASE.unlink(missing_ok=True)


def take(holder: str) -> None:
    """Before `holder` (a lab) starts kubelets: record the machine's values if nobody has."""
    with _locked() as lease:
        if not lease["holders"]:
            lease["original"] = read_settings()
            lease["absent"] = [d for d in MACHINE_DIRS if not Path(d).exists()]
        if holder not in lease["holders"]:
            lease["holders"].append(holder)


def give_back(holder: str) -> list[str]:
    """After `holder`'s kubelets stopped: the last holder puts the recorded values back.
    Returns what could not be restored."""
    with _locked() as lease:
        if holder in lease["holders"]:
            lease["holders"].remove(holder)
        if lease["holders"] or lease["original"] is None:
            return []
        for folder in lease.get("absent", []):
            shutil.rmtree(folder, ignore_errors=True)
        return _write_settings(lease["original"])


def holders() -> list[str]:
    with _locked() as lease:
        return list(lease["holders"])

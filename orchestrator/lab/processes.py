"""Start server processes we can later stop by pid, and only those.

Each server starts in its own session, so it and every child it forks (gridftp forks per
connection, xrootd runs `xrdcp --server` for root:// TPC) share one process group whose id
is the recorded pid. A recorded start time guards against a reused pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STOP_GRACE_SECONDS = 5.0


@dataclass(frozen=True)
class ServerProcess:
    """A process the lab started: enough to find it again and to be sure it is the same one."""

    node: str
    service: str  # "xrootd" | "gridftp"
    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: changes when a pid is reused
    log: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerProcess:
        return cls(**data)


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name may contain spaces and parentheses; fields resume after the last ")"
    return raw[raw.rindex(")") + 2 :].split()


def start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def _is_running(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def is_alive(process: ServerProcess) -> bool:
    """True while the recorded process (not a later one with the same pid) still runs."""
    return start_ticks(process.pid) == process.start_ticks and _is_running(process.pid)


def group_members(pgid: int) -> list[int]:
    """Running (non-zombie) processes in process group `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def spawn(
    node: str,
    service: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    log: Path,
    cwd: Path,
) -> ServerProcess:
    """Start `argv` in a new session, stdout and stderr appended to `log`."""
    with open(log, "ab") as out:
        child = subprocess.Popen(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    ticks = start_ticks(child.pid)
    return ServerProcess(node, service, child.pid, ticks or 0, str(log))


def _reap(pid: int) -> None:
    """Collect the exit status if the process is our own child (the API case)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop(process: ServerProcess, grace: float = STOP_GRACE_SECONDS) -> list[int]:
    """SIGTERM the process group, SIGKILL what is left after `grace`; return survivors."""
    ticks = start_ticks(process.pid)
    if ticks is not None and ticks != process.start_ticks:
        return []  # the pid now belongs to another process: not ours to kill
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)  # also reaches children left by a dead leader
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(process.pid)
        if not group_members(process.pid):
            return []
        time.sleep(0.1)
    # forked children keep the group id even after the leader is gone
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for _ in range(50):
        _reap(process.pid)
        if not group_members(process.pid):
            return []
        time.sleep(0.1)
    return group_members(process.pid)


def last_log_line(*logs: Path) -> str:
    """The last non-blank line of the first of `logs` that has one, and where it is."""
    for log in logs:
        try:
            lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            continue
        if lines:
            return f"{lines[-1].strip()} (log: {log})"
    return f"no output (log: {logs[-1]})"

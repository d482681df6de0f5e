"""/proc scans for the "no child process left behind" checks (no psutil needed)."""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) of `pid`, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the command name may contain spaces
    return int(fields[1]), int(fields[2])


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def descendants(root: int | None = None) -> set[int]:
    """Every live process below `root` (default: this process)."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None:
            children.setdefault(stat[0], []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def _uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def group_of(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def processes_mentioning(text: str, uid: int | None = None) -> list[int]:
    """Live processes (of user `uid`, if given) whose command line contains `text`."""
    found = []
    for pid in _pids():
        try:
            if uid is not None and os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline and pid != os.getpid():
            found.append(pid)
    return found


# Processes that were already running when the current test began (set by an autouse fixture):
# other areas' session fixtures (a simulated cluster, a webapp) are not this test's leftovers.
already_running: set[int] = set()


def leftovers(server_groups: set[int], mention: str | None = None) -> list[int]:
    """New descendants outside the servers' groups, plus our user's processes naming `mention`.

    The servers run as another user; their own helpers (XRootD's `xrdcp --server`) are theirs.
    """
    ours = {
        p
        for p in descendants() - already_running
        if group_of(p) not in server_groups and _uid(p) == os.getuid()
    }
    if mention is not None:
        named = processes_mentioning(mention, uid=os.getuid())
        ours |= {p for p in named if group_of(p) not in server_groups}
    return sorted(ours)

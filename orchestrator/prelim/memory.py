"""How much memory a preliminary run may fill, and the guard that refuses a run that would not
fit (the paper's filesize runs hit their pod's 119 GB limit)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.sizes import format_size

CGROUP_V2 = Path("/sys/fs/cgroup")
CGROUP_V1 = Path("/sys/fs/cgroup/memory")


@dataclass(frozen=True)
class MemoryBudget:
    """The least of what the machine, this container and the data's file system allow."""

    bytes: int
    limits: dict[str, int]  # what each source allows, for the message

    def describe(self) -> str:
        return "; ".join(f"{name} {format_size_round(n)}" for name, n in self.limits.items())


def format_size_round(size: int) -> str:
    """A size for people: in the largest binary unit it reaches, exact or to one decimal."""
    for name, unit in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if size >= unit:
            return f"{size // unit}{name}" if size % unit == 0 else f"{size / unit:.1f}{name}"
    return format_size(size)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _cgroup_room() -> int | None:
    """What this cgroup may still allocate (a pod's memory limit), if it has a limit."""
    limit, usage = _read_int(CGROUP_V2 / "memory.max"), _read_int(CGROUP_V2 / "memory.current")
    if limit is None:
        limit = _read_int(CGROUP_V1 / "memory.limit_in_bytes")
        usage = _read_int(CGROUP_V1 / "memory.usage_in_bytes")
    if limit is None or limit >= 1 << 60:  # "max" or v1's "no limit"
        return None
    return max(0, limit - (usage or 0))


def memory_budget(data_dir: Path, limit: int | None = None) -> MemoryBudget:
    """What a run writing into `data_dir` may use; `limit` (--memory-limit) caps it further."""
    limits: dict[str, int] = {}
    if (available := _mem_available()) is not None:
        limits["MemAvailable"] = available
    if (room := _cgroup_room()) is not None:
        limits["cgroup limit"] = room
    stat = os.statvfs(data_dir)
    limits[f"free in {data_dir}"] = stat.f_bavail * stat.f_frsize
    if limit is not None:
        limits["--memory-limit"] = limit
    return MemoryBudget(min(limits.values()), limits)


def check_fits(file_size: int, concurrency: int, budget: MemoryBudget) -> None:
    """Refuse, saying why, when a source file and `concurrency` copies do not fit."""
    needed = file_size * (concurrency + 1)
    if needed > budget.bytes:
        raise UserError(
            f"{format_size_round(file_size)} x ({concurrency} copies + the source) = "
            f"{format_size_round(needed)} does not fit in the {format_size_round(budget.bytes)} "
            f"this run may use ({budget.describe()}); lower --max or the file size"
        )

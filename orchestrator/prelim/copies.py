"""K concurrent plain `cp` copies between two directories: the ceiling the TPC methods are
compared with (the paper's Figure 3), timed and summed up the way a measurement is."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orchestrator.measurement.record import makespan_gbps, throughput_gbps


async def copy_concurrently(source: Path, target_dir: Path, copies: int) -> dict:
    """Start `copies` cp processes at once; the paper's and the makespan throughput."""
    spans: list[tuple[float, float]] = []
    errors: list[str] = []

    async def one(index: int) -> None:
        target = target_dir / f"tpcbench-cp-{index}"
        start = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            "cp", str(source), str(target), stderr=asyncio.subprocess.PIPE
        )
        _, stderr = await process.communicate()
        end = time.monotonic()
        if process.returncode == 0:
            spans.append((start, end))
        else:
            message = stderr.decode(errors="replace").strip()
            errors.append(message or f"cp exited with {process.returncode}")
        target.unlink(missing_ok=True)

    await asyncio.gather(*(one(i) for i in range(copies)))
    size = source.stat().st_size
    durations = [end - start for start, end in spans]
    return {
        "throughput_gbps": throughput_gbps(size, durations) if durations else None,
        "makespan_gbps": makespan_gbps(size, spans) if spans else None,
        "succeeded": len(spans),
        "failed": len(errors),
        "error": errors[0] if errors else "",
    }

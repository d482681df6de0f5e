"""The process-group runner: output is collected, and nothing outlives a timeout."""

from __future__ import annotations

import asyncio
import contextlib

from orchestrator.transfers.process import run_process
from tests.support.processes import descendants


def test_lines_split_on_carriage_returns_reach_the_callback() -> None:
    lines: list[str] = []
    result = asyncio.run(
        run_process(
            ["sh", "-c", "printf '1 bytes\\r2 bytes\\r\\n3 bytes\\n'; echo oops >&2; exit 3"],
            timeout=30,
            on_stdout_line=lines.append,
        )
    )
    assert lines == ["1 bytes", "2 bytes", "3 bytes"]
    assert (result.returncode, result.stderr, result.timed_out) == (3, "oops\n", False)


def test_timeout_ends_the_whole_group_including_grandchildren() -> None:
    before = descendants()
    # The shell ignores TERM and its background sleeper would outlive a plain kill().
    script = "trap '' TERM; sleep 300 & sleep 300; wait"
    result = asyncio.run(run_process(["sh", "-c", script], timeout=0.5))
    assert result.timed_out
    assert descendants() - before == set()


def test_cancellation_also_ends_the_group() -> None:
    before = descendants()

    async def cancel_midway() -> None:
        task = asyncio.create_task(run_process(["sh", "-c", "sleep 300 & sleep 300"], timeout=60))
        await asyncio.sleep(0.3)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    assert descendants() - before == set()

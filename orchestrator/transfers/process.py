"""Run a transfer command in its own process group; on timeout or cancel, end the whole group."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

# Seconds between SIGTERM and SIGKILL when ending a process group.
TERMINATE_GRACE = 3.0
_LINE_BREAK = re.compile(r"[\r\n]")


@dataclass(frozen=True)
class ProcessResult:
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def signalled(self) -> bool:
        """Ended by a signal that we did not send (we only signal on timeout)."""
        return not self.timed_out and self.returncode is not None and self.returncode < 0


async def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float,
    on_stdout_line: Callable[[str], None] | None = None,
    on_stderr_line: Callable[[str], None] | None = None,
) -> ProcessResult:
    """Run `argv` to completion or `timeout`; no process of its group outlives this call.

    The line callbacks get each line as it arrives (for progress and phase timing).
    """
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env) if env is not None else None,
        start_new_session=True,  # its own process group, so killpg reaches grandchildren too
    )
    assert process.stdout is not None and process.stderr is not None
    stdout_task = asyncio.create_task(_read_lines(process.stdout, on_stdout_line))
    stderr_task = asyncio.create_task(_read_lines(process.stderr, on_stderr_line))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            timed_out = True
    finally:
        # Also on cancellation: never leave the group running.
        await _end_group(process)
    try:
        stdout = await stdout_task
        stderr = await stderr_task
    except BaseException:
        stdout_task.cancel()
        stderr_task.cancel()
        raise
    return ProcessResult(process.returncode, stdout, stderr, timed_out)


async def _end_group(process: asyncio.subprocess.Process) -> None:
    pgid = process.pid  # start_new_session makes the child its group's leader
    if process.returncode is None:
        _signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), TERMINATE_GRACE)
    # Whatever of the group is still alive (the leader or forked helpers) gets SIGKILL.
    _signal_group(pgid, signal.SIGKILL)
    await process.wait()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


async def _read_lines(stream: asyncio.StreamReader, on_line: Callable[[str], None] | None) -> str:
    """Collect a stream; hand every \\r- or \\n-terminated line to `on_line` as it arrives."""
    collected: list[str] = []
    pending = ""
    while chunk := await stream.read(65536):
        text = chunk.decode(errors="replace")
        collected.append(text)
        if on_line is None:
            continue
        *lines, pending = _LINE_BREAK.split(pending + text)
        for line in lines:
            if line.strip():
                on_line(line)
    if on_line is not None and pending.strip():
        on_line(pending)
    return "".join(collected)

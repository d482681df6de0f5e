"""A root:// redirector lookup walked and timed from XrdCl's debug log (lookup.py's "root").

`xrdfs root://<entry> stat /<name>` with XRD_LOGLEVEL=Debug: XrdCl follows each kXR_redirect
itself, and its log says when (XrdCl 5.5.3):

    [2026-11-25 10:32:16.714898 +0000][Debug][ExDbgMsg] [g:1094] MsgHandler created: 0x9b..
    [2026-11-25 10:32:16.975997 +0000][Debug][ExDbgMsg] [r:1094] Retry at server MsgHandler:..
    ...
    [2026-11-25 10:32:17.363305 +0000][Debug][ExDbgMsg] [ds:1094] Calling MsgHandler: 0x9b..
        (message: kXR_stat ...) with status: [SUCCESS] .

A step runs from the request's handler at a server (created, or retried there after a
redirect) to the next server's retry, or to the answer; it includes the new channel XrdCl opens
to that server (TCP, login and the GSI handshake: root:// steps cost more than https's). A
retry at the same server is that redirector's wait (its lookup goes on): the same step.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.error_classes import outcome_of
from orchestrator.transfers.gridftp import credential_env
from orchestrator.transfers.root import FAIL_FAST_CONNECT, GSI_CLIENT, gsi_server_names

STAT_TIMEOUT = 60.0
_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) [+-]\d{4}\]")
_HANDLER = re.compile(
    r"\] \[([^\]]+)\] (MsgHandler created|Retry at server MsgHandler|Calling MsgHandler)"
)


def xrdfs_environment(client: ClientCredentials, entry: Endpoint) -> dict[str, str]:
    """xrdfs's environment: the client certificate for GSI, any CN of our CA (a redirector
    sends the client on to servers of other names), fail fast, XrdCl's debug log."""
    return {
        **credential_env(client),
        **GSI_CLIENT,
        **gsi_server_names(entry),
        **FAIL_FAST_CONNECT,
        "XRD_LOGLEVEL": "Debug",
    }


def stat_through(url: str, path: str, env: Mapping[str, str]) -> tuple[int | None, bool, str]:
    """Run `xrdfs URL stat PATH`: (exit code or None, timed out, stderr with the log)."""
    try:
        done = subprocess.run(
            ["xrdfs", url, "stat", path], capture_output=True, text=True,
            env={**os.environ, **env}, timeout=STAT_TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return None, True, stderr or ""
    except OSError as exc:
        return 127, False, f"xrdfs: {exc}"
    return done.returncode, False, done.stderr


def steps_of(log: str, names: Mapping[str, str]) -> tuple[list[tuple[str, float]], bool]:
    """From XrdCl's log: [(server, seconds)] in order, and whether the last answered success."""
    marks: list[tuple[str, datetime]] = []
    answered, success = None, False
    for line in log.splitlines():
        stamp, handler = _STAMP.match(line), _HANDLER.search(line)
        if stamp is None or handler is None:
            continue
        at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
        host, event = handler.group(1), handler.group(2)
        if event == "Calling MsgHandler":
            answered, success = at, "[SUCCESS]" in line
        elif not marks or marks[-1][0] != host:
            marks.append((host, at))
    if not marks:
        return [], False
    ends = [at for _, at in marks[1:]] + [answered or marks[-1][1]]
    steps = [
        (names.get(host, host), (end - start).total_seconds())
        for (host, start), end in zip(marks, ends, strict=True)
    ]
    return steps, success and answered is not None


def root_outcome(code: int | None, timed_out: bool, log: str) -> dict[str, Any]:
    """The error class and message of a failed xrdfs stat (its lines that are no log)."""
    verdict = "\n".join(line for line in log.splitlines() if not _STAMP.match(line))
    outcome = outcome_of(code if code != 0 else 1, timed_out, verdict, STAT_TIMEOUT)
    return outcome

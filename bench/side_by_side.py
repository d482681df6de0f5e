"""What the benches that run our tools side by side with the bare commands share: the
commands an operator would type (curl COPY, globus-url-copy, xrdcp --tpc, with the options
our native tools use), running K of them at once, and the CPU seconds spent."""

from __future__ import annotations

import asyncio
import resource
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.transfers.gridftp import credential_env, globus_url_copy_argv
from orchestrator.transfers.https import delete_https, tpc_headers
from orchestrator.transfers.root import xrdcp_argv
from orchestrator.transfers.urls import https_url


def bare_argv(
    protocol: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials, size: int, name: str,
    streams: int,
) -> list[str]:  # fmt: skip
    """The command an operator would type, with the options our native tool uses."""
    if protocol == "gridftp":
        return globus_url_copy_argv(src, dst, source_name(size), name, streams)
    if protocol == "root":
        return xrdcp_argv(src, dst, source_name(size), name, streams)
    headers = tpc_headers(https_url(src, source_name(size)), None, streams)
    argv = ["curl", "-sS", "--capath", str(creds.certdir), "--cert", str(creds.cert)]
    argv += ["--key", str(creds.key), "-X", "COPY"]
    for key, value in headers.items():
        argv += ["-H", f"{key}: {value}"]
    return [*argv, https_url(dst, name)]


def cpu_seconds() -> float:
    """User + system CPU of this process and of its reaped children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def run_bare(
    protocol: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials, size: int,
    streams: int, transfers: int,
) -> tuple[list[tuple[float, float]], list[str]]:  # fmt: skip
    """K bare commands at once: the (start, end) of the successes, spawn to exit, and the
    failures."""
    tag = uuid.uuid4()
    names = [
        f"/tpcbench-gridftp-{i}" if protocol == "gridftp" else f"/tpcbench-bare-{tag}-{i}"
        for i in range(transfers)
    ]

    async def one(name: str) -> tuple[tuple[float, float], str | None]:
        argv = bare_argv(protocol, src, dst, creds, size, name, streams)
        begin = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *argv, env=credential_env(creds), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await process.communicate()
        span = (begin, time.monotonic())
        last = stdout.decode(errors="replace").strip().splitlines()[-1:] or [""]
        if process.returncode != 0 or (protocol == "https" and not last[0].startswith("success")):
            return span, f"{protocol} bare: rc={process.returncode} {last[0]} {stderr[-300:]!r}"
        return span, None

    results = await asyncio.gather(*(one(name) for name in names))
    await asyncio.gather(*(delete_https(dst, name, creds) for name in names))
    return [span for span, error in results if error is None], [e for _, e in results if e]


def on_a_lab_pair(
    prefix: str,
    network: LabNetwork,
    args: Any,
    bench: Callable[[Sequence[Endpoint], ClientCredentials, Any], list],
) -> list:
    """`bench(nodes, creds, args)` on a 2-node lab of its own (links shaped to
    `args.rate_gbit`, 0: unshaped), taken down afterwards."""
    with temporary_lab(
        prefix, 2, args.file_size, mode=NETNS, network=network, rate_gbit=args.rate_gbit or None
    ) as inventory:
        return bench(inventory.nodes, inventory.client, args)

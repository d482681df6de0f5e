"""What the benches that run our tools side by side with the bare commands share: the
commands an operator would type (curl COPY after a curl asking the source for a macaroon,
globus-url-copy, xrdcp --tpc, with the options and environment our native tools use),
running K of them at once, the CPU seconds spent, the bench's own lab network, and the
options of the benches that compare per protocol."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.topology import NETNS, LabNetwork
from orchestrator.sizes import parse_size
from orchestrator.transfers import DEFAULT_TIMEOUT
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.gridftp import credential_env, globus_url_copy_argv
from orchestrator.transfers.https import delete_https, tpc_headers
from orchestrator.transfers.macaroons import DOWNLOAD, MACAROON_REQUEST, macaroon_request
from orchestrator.transfers.root import xrdcp_argv, xrdcp_environment
from orchestrator.transfers.urls import https_url

PROTOCOLS = ("https", "root", "gridftp")


def protocol_bench_parser(description: str, epilog: str) -> argparse.ArgumentParser:
    """The options of a bench that compares K copies per protocol on a lab pair."""
    parser = argparse.ArgumentParser(description=description, epilog=epilog)
    parser.add_argument("--reps", type=int, default=5, help="repetitions, at least 3 (default 5)")
    parser.add_argument("--transfers", type=int, default=2, help="K copies at once (default 2)")
    parser.add_argument(
        "--file-size", type=parse_size, default=parse_size("256MiB"), help="default 256MiB"
    )
    # Link-bound, as the real case is: on a shared 2-core machine unshaped copies measure
    # CPU contention more than what the bench compares.
    parser.add_argument(
        "--rate-gbit", type=float, default=2.0, help="shape the lab links, 0: unshaped (default 2)"
    )
    parser.add_argument(
        "--protocols",
        type=lambda text: tuple(text.split(",")),
        default=PROTOCOLS,
        help="a comma-separated subset of https,root,gridftp (default all)",
    )
    return parser


def check_protocol_bench_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace, programs: Sequence[str]
) -> None:
    """Refuse, as a usage error, what cannot run here or would mean nothing."""
    if args.reps < 3:
        parser.error("--reps must be at least 3 (each side goes first at least once)")
    if args.transfers < 1:
        parser.error("--transfers must be at least 1")
    unknown = [p for p in args.protocols if p not in PROTOCOLS]
    if unknown or not args.protocols:
        parser.error(f"--protocols: {','.join(unknown)} not in {','.join(PROTOCOLS)}")
    if os.geteuid() != 0:
        parser.error("needs root (the lab's network namespaces)")
    missing = [c for c in programs if not shutil.which(c)]
    if missing:
        parser.error(f"not installed: {', '.join(missing)} (scripts/install-system-deps.sh)")


def bench_network(prefix: str, subnet_offset: int) -> LabNetwork:
    """The bench's lab network, unless TPCBENCH_LAB_PREFIX or TPCBENCH_LAB_SUBNET_OFFSET
    name another (when another lab already uses it on this machine)."""
    offset = os.environ.get("TPCBENCH_LAB_SUBNET_OFFSET", str(subnet_offset))
    if not offset.isdigit():
        raise SystemExit("TPCBENCH_LAB_SUBNET_OFFSET must be a whole number")
    return LabNetwork(os.environ.get("TPCBENCH_LAB_PREFIX", prefix), int(offset))


def curl_argv(creds: ClientCredentials) -> list[str]:
    return ["curl", "-sS", "--capath", str(creds.certdir), "--cert", str(creds.cert), "--key",
            str(creds.key)]  # fmt: skip


def macaroon_argv(src: Endpoint, creds: ClientCredentials, size: int) -> list[str]:
    """What an operator types first for an x509 pull: ask the source for a macaroon for the
    destination's GET (the request our native tool makes, transfers/macaroons.py)."""
    body = json.dumps(macaroon_request(DOWNLOAD, DEFAULT_TIMEOUT))
    return [*curl_argv(creds), "-X", "POST", "-H", f"Content-Type: {MACAROON_REQUEST}",
            "--data", body, https_url(src, source_name(size))]  # fmt: skip


def bare_argv(
    protocol: str, src: Endpoint, dst: Endpoint, creds: ClientCredentials, size: int, name: str,
    streams: int, macaroon: str | None = None,
) -> list[str]:  # fmt: skip
    """The command an operator would type, with the options our native tool uses; an https
    COPY passes on the source's `macaroon` (None: the source leg goes anonymous)."""
    copy = TransferRequest(src, dst, source_name(size), name, streams, creds)
    if protocol == "gridftp":
        return globus_url_copy_argv(copy)
    if protocol == "root":
        return xrdcp_argv(copy)
    headers = tpc_headers(https_url(src, source_name(size)), None, streams)
    if macaroon is not None:
        headers["TransferHeaderAuthorization"] = f"Bearer {macaroon}"
    argv = [*curl_argv(creds), "-X", "COPY"]
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
    """K bare commands at once: the (start, end) of the successes, from the first spawn
    (https: the macaroon's curl) to the copy's exit, and the failures."""
    tag = uuid.uuid4()
    names = [
        f"/tpcbench-gridftp-{i}" if protocol == "gridftp" else f"/tpcbench-bare-{tag}-{i}"
        for i in range(transfers)
    ]
    env = xrdcp_environment(creds, src, dst) if protocol == "root" else credential_env(creds)

    async def command(argv: list[str]) -> tuple[int | None, str, bytes]:
        process = await asyncio.create_subprocess_exec(
            *argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        stdout, stderr = await process.communicate()
        return process.returncode, stdout.decode(errors="replace"), stderr

    async def one(name: str) -> tuple[tuple[float, float], str | None]:
        begin = time.monotonic()
        macaroon = None
        if protocol == "https":
            returncode, answer, stderr = await command(macaroon_argv(src, creds, size))
            try:
                macaroon = json.loads(answer)["macaroon"]
            except (ValueError, KeyError, TypeError):
                failure = f"https bare macaroon: rc={returncode} {answer[:200]} {stderr[-300:]!r}"
                return (begin, time.monotonic()), failure
        argv = bare_argv(protocol, src, dst, creds, size, name, streams, macaroon)
        returncode, stdout, stderr = await command(argv)
        span = (begin, time.monotonic())
        last = stdout.strip().splitlines()[-1:] or [""]
        if returncode != 0 or (protocol == "https" and not last[0].startswith("success")):
            return span, f"{protocol} bare: rc={returncode} {last[0]} {stderr[-300:]!r}"
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
    ) as (_, inventory):
        return bench(inventory.nodes, inventory.client, args)

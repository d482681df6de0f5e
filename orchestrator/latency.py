"""Round-trip time from a source node to a destination: median of several TCP connects.

A TCP connect returns after SYN / SYN-ACK, one round trip, and needs nothing but the
service port that is open anyway (ICMP may be filtered). The same probe code runs
wherever the source's network position is: in-process when the orchestrator sits beside
the servers, inside the lab node's namespace via `ip netns exec`, or on a cluster node via
any exec prefix (e.g. `kubectl exec <pod> --`) running `python -m orchestrator.latency`.

    python -m orchestrator.latency ADDRESS PORT [--count N] [--timeout S]
prints one JSON object: {"address", "port", "samples_ms", "rtt_ms"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import sys
import time
from collections.abc import Sequence

from orchestrator.endpoints import Endpoint

DEFAULT_COUNT = 5
CONNECT_TIMEOUT = 3.0


def connect_samples_ms(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> list[float]:
    """Milliseconds each of `count` TCP connects took; failed connects are left out."""
    samples = []
    for _ in range(count):
        begin = time.perf_counter()
        try:
            with socket.create_connection((address, port), timeout=timeout):
                samples.append((time.perf_counter() - begin) * 1000.0)
        except OSError:
            continue
    return samples


def probe(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> dict:
    """The probe's result as the module's command line prints it."""
    samples = connect_samples_ms(address, port, count, timeout)
    return {
        "address": address,
        "port": port,
        "samples_ms": [round(s, 4) for s in samples],
        "rtt_ms": round(statistics.median(samples), 4) if samples else None,
    }


def probe_prefix(src: Endpoint) -> list[str] | None:
    """How to reach the source's network position; None means: from this process."""
    if src.netns:
        return ["ip", "netns", "exec", src.netns]
    return None


async def measure_rtt(
    src: Endpoint,
    dst: Endpoint,
    port: int,
    *,
    count: int = DEFAULT_COUNT,
    exec_prefix: Sequence[str] | None = None,
    python: str = sys.executable,
) -> float | None:
    """Median RTT in ms from `src` to `dst`:`port`, or None if no connect succeeded."""
    prefix = list(exec_prefix) if exec_prefix is not None else probe_prefix(src)
    if prefix is None:
        result = await asyncio.to_thread(probe, dst.address, port, count)
        return result["rtt_ms"]
    argv = [*prefix, python, "-m", "orchestrator.latency", dst.address, str(port)]
    process = await asyncio.create_subprocess_exec(
        *argv, "--count", str(count), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        stdout, _ = await asyncio.wait_for(process.communicate(), count * CONNECT_TIMEOUT + 30)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None
    if process.returncode != 0:
        return None
    try:
        return json.loads(stdout)["rtt_ms"]
    except (ValueError, KeyError, TypeError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.latency", description=__doc__)
    parser.add_argument("address")
    parser.add_argument("port", type=int)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT)
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    result = probe(args.address, args.port, args.count, args.timeout)
    print(json.dumps(result))
    return 0 if result["rtt_ms"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())

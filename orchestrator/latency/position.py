"""The orchestrator's side: an RTT measured from the source node's position (its netns in
the lab, its RTT probe on a cluster, else this process), the probe asked over HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import Sequence
from typing import Any, Literal

from orchestrator.endpoints import Endpoint
from orchestrator.latency.connects import CONNECT_TIMEOUT, DEFAULT_COUNT, measure_connects

log = logging.getLogger(__name__)

PROBE_PORT_NAME = "probe"  # Endpoint.ports key (and container port name) of the RTT probe
PROBE_DEFAULT_PORT = 9106
MAX_SAMPLES = 20
RttOrigin = Literal["exec", "netns", "probe", "orchestrator"]


def probe_prefix(src: Endpoint) -> list[str] | None:
    """How to reach the source's network position; None means: from this process."""
    if src.netns:
        return ["ip", "netns", "exec", src.netns]
    return None


def rtt_origin(src: Endpoint, exec_prefix: Sequence[str] | None = None) -> RttOrigin:
    """Where `measure_rtt` measures from: an explicit exec prefix, the node's RTT probe, the
    lab netns, or (none of these) the orchestrator itself."""
    if exec_prefix is not None:
        return "exec"
    if PROBE_PORT_NAME in src.ports:  # a probe runs at the source's position (its netns too)
        return "probe"
    if src.netns:
        return "netns"
    return "orchestrator"


_warned_from_orchestrator = threading.Event()


async def measure_rtt(
    src: Endpoint,
    dst: Endpoint,
    port: int,
    *,
    count: int = DEFAULT_COUNT,
    exec_prefix: Sequence[str] | None = None,
    python: str = sys.executable,
) -> float | None:
    """Median RTT in ms from `src` to `dst`:`port`, or None if no connect succeeded.

    The one entry point: it measures from the source's position (see `rtt_origin`).
    """
    origin = rtt_origin(src, exec_prefix)
    if origin == "probe":
        return await measure_rtt_via_probe(src, dst, port, count=count)
    if origin == "orchestrator":
        if not _warned_from_orchestrator.is_set():
            _warned_from_orchestrator.set()
            log.warning(
                "RTT %s -> %s is measured from the orchestrator, not from the source node "
                "(no netns and no '%s' port on the endpoint); further RTTs likewise",
                src.name,
                dst.name,
                PROBE_PORT_NAME,
            )
        result = await asyncio.to_thread(measure_connects, dst.address, port, count)
        return result.rtt_ms
    prefix = list(exec_prefix) if exec_prefix is not None else probe_prefix(src)
    assert prefix is not None
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


def url_host(address: str) -> str:
    """An address as the host part of a URL (IPv6 in brackets)."""
    return f"[{address}]" if ":" in address else address


def probe_url(src: Endpoint, dst: Endpoint, port: int, count: int = DEFAULT_COUNT) -> str:
    """The question to the source node's RTT probe: connect times to `dst`:`port`."""
    import httpx  # here: the server images, which run the probe, carry no HTTP client

    base = f"http://{url_host(src.address)}:{src.ports[PROBE_PORT_NAME]}/rtt"
    return str(httpx.URL(base, params={"host": dst.address, "port": port, "samples": count}))


async def _ask_probe(url: str, timeout: float) -> dict[str, Any]:
    import httpx

    # No proxies: the probe is on the node's own address, never behind $HTTP_PROXY.
    async with httpx.AsyncClient(trust_env=False, timeout=timeout) as client:
        response = await client.get(url)
    try:  # 400 / 403 / 503 still carry a JSON error
        answer = response.json()
    except ValueError:
        return {"rtt_ms": None, "error": f"HTTP {response.status_code} {response.reason_phrase}"}
    return answer if isinstance(answer, dict) else {"rtt_ms": None, "error": repr(answer)}


async def measure_rtt_via_probe(
    src: Endpoint, dst: Endpoint, port: int, *, count: int = DEFAULT_COUNT
) -> float | None:
    """Median RTT in ms from `src` to `dst`:`port`, measured by the probe on the source node."""
    import httpx

    url = probe_url(src, dst, port, min(count, MAX_SAMPLES))
    try:
        answer = await _ask_probe(url, count * CONNECT_TIMEOUT + 30)
    except httpx.HTTPError as exc:
        log.warning("RTT probe on %s (%s) did not answer: %s", src.name, url, exc)
        return None
    rtt = answer.get("rtt_ms")
    if not isinstance(rtt, int | float) or isinstance(rtt, bool):
        log.warning(
            "RTT %s -> %s via the probe: no RTT (%s)", src.name, dst.name, answer.get("error")
        )
        return None
    return float(rtt)

"""Round-trip time from a source node to a destination: median of several TCP connects.

A TCP connect returns after SYN / SYN-ACK, one round trip, and needs nothing but the
service port that is open anyway (ICMP may be filtered). One measuring function
(`measure_connects`) runs wherever the source's network position is:
- in the lab, inside the source node's namespace: `ip netns exec NS python -m orchestrator.latency`;
- on a cluster, in the RTT probe beside the servers on every node (`... serve`, below),
  which the orchestrator asks over HTTP;
- otherwise in-process, i.e. from the orchestrator's own position (logged as such).

    python -m orchestrator.latency ADDRESS PORT [--count N] [--timeout S]
prints one JSON object: {"address", "port", "samples_ms", "rtt_ms"}.

    python -m orchestrator.latency serve [--bind ADDR] [--port 9106] [--allow CIDR ...]
serves `GET /rtt?host=H&port=P&samples=N` -> {"host", "port", "rtt_ms", "samples", "error"}
and `GET /healthz`.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import re
import signal
import socket
import socketserver
import statistics
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from orchestrator.endpoints import Endpoint

log = logging.getLogger(__name__)

DEFAULT_COUNT = 5
CONNECT_TIMEOUT = 3.0
PROBE_PORT_NAME = "probe"  # Endpoint.ports key (and container port name) of the RTT probe
PROBE_DEFAULT_PORT = 9106
MAX_SAMPLES = 20
MAX_CONCURRENT = 8  # measurements the probe runs at once; more get 503

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
RttOrigin = Literal["exec", "netns", "probe", "orchestrator"]


# -- the measuring function: every path below ends here ---------------------------------------


@dataclass(frozen=True)
class RttResult:
    """Connect times to one target; `error` says why none succeeded (a failure is data)."""

    host: str
    port: int
    samples_ms: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def rtt_ms(self) -> float | None:
        return round(statistics.median(self.samples_ms), 4) if self.samples_ms else None

    @property
    def rounded_samples(self) -> list[float]:
        return [round(s, 4) for s in self.samples_ms]


def measure_connects(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> RttResult:
    """Time `count` TCP connects to `address`:`port`; failed connects are left out."""
    samples: list[float] = []
    error = None
    for _ in range(count):
        begin = time.perf_counter()
        try:
            with socket.create_connection((address, port), timeout=timeout):
                samples.append((time.perf_counter() - begin) * 1000.0)
        except OSError as exc:
            error = f"connect to {address} port {port} failed: {type(exc).__name__}: {exc}"
    return RttResult(address, port, samples, None if samples else error)


def connect_samples_ms(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> list[float]:
    """Milliseconds each of `count` TCP connects took; failed connects are left out."""
    return measure_connects(address, port, count, timeout).samples_ms


def probe(
    address: str, port: int, count: int = DEFAULT_COUNT, timeout: float = CONNECT_TIMEOUT
) -> dict:
    """The probe's result as the module's command line prints it."""
    result = measure_connects(address, port, count, timeout)
    return {
        "address": address,
        "port": port,
        "samples_ms": result.rounded_samples,
        "rtt_ms": result.rtt_ms,
    }


# -- the orchestrator side: pick the source's network position ---------------------------------


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


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def probe_url(src: Endpoint, dst: Endpoint, port: int, count: int = DEFAULT_COUNT) -> str:
    """The question to the source node's RTT probe: connect times to `dst`:`port`."""
    query = urllib.parse.urlencode({"host": dst.address, "port": port, "samples": count})
    return f"http://{_url_host(src.address)}:{src.ports[PROBE_PORT_NAME]}/rtt?{query}"


def _ask_probe(url: str, timeout: float) -> dict[str, Any]:
    # No proxies: the probe is on the node's own address, never behind $HTTP_PROXY.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:  # 400 / 403 / 503 still carry a JSON error
        try:
            return json.load(exc)
        except ValueError:
            return {"rtt_ms": None, "error": f"HTTP {exc.code} {exc.reason}"}
        finally:
            exc.close()


async def measure_rtt_via_probe(
    src: Endpoint, dst: Endpoint, port: int, *, count: int = DEFAULT_COUNT
) -> float | None:
    """Median RTT in ms from `src` to `dst`:`port`, measured by the probe on the source node."""
    url = probe_url(src, dst, port, min(count, MAX_SAMPLES))
    try:
        answer = await asyncio.to_thread(_ask_probe, url, count * CONNECT_TIMEOUT + 30)
    except (OSError, ValueError) as exc:
        log.warning("RTT probe on %s (%s) did not answer: %s", src.name, url, exc)
        return None
    rtt = answer.get("rtt_ms") if isinstance(answer, dict) else None
    if not isinstance(rtt, int | float) or isinstance(rtt, bool):
        error = answer.get("error") if isinstance(answer, dict) else answer
        log.warning("RTT %s -> %s via the probe: no RTT (%s)", src.name, dst.name, error)
        return None
    return float(rtt)


# -- the probe service: the same measuring function behind HTTP --------------------------------

_LABEL = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


def is_host(value: str) -> bool:
    """An IP literal or a DNS host name (nothing else: no ports, paths or numeric shorthands)."""
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    labels = value.removesuffix(".").split(".")
    if len(value) > 253 or not all(_LABEL.match(label) for label in labels):
        return False
    return not labels[-1].isdigit()  # "127.1" or "2130706433" are addresses in disguise


def parse_network(value: str) -> Network:
    """An --allow value: a CIDR (a bare address is a /32 or /128)."""
    try:
        return ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a CIDR: {value!r} ({exc})") from None


def is_allowed(address: str, allow: Sequence[Network]) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in allow)


class BadParameter(Exception):
    def __init__(self, parameter: str, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.parameter = parameter
        self.status = status


def parse_rtt_query(query: str) -> tuple[str, int, int]:
    """host, port, samples from `/rtt`'s query string; BadParameter names what is wrong."""
    try:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise BadParameter("query", "malformed query string") from None
    values: dict[str, str] = {}
    for key, value in pairs:
        if key not in ("host", "port", "samples"):
            raise BadParameter(key, f"unknown parameter {key!r} (host, port, samples)")
        if key in values:
            raise BadParameter(key, f"{key} given more than once")
        values[key] = value
    host = values.get("host")
    if not host:
        raise BadParameter("host", "host is required")
    if not is_host(host):
        raise BadParameter("host", "host must be an IP address or a host name")

    def integer(key: str, default: int | None, low: int, high: int) -> int:
        raw = values.get(key)
        if raw is None:
            if default is None:
                raise BadParameter(key, f"{key} is required")
            return default
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6 and low <= int(raw) <= high):
            raise BadParameter(key, f"{key} must be an integer from {low} to {high}")
        return int(raw)

    return host, integer("port", None, 1, 65535), integer("samples", DEFAULT_COUNT, 1, MAX_SAMPLES)


class ProbeServer(ThreadingHTTPServer):
    """The RTT probe: answers `/rtt` with `measure_connects` from this host's position."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        *,
        allow: Sequence[Network] = (),
        timeout: float = CONNECT_TIMEOUT,
        max_concurrent: int = MAX_CONCURRENT,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.allow = list(allow)  # empty: every target is allowed
        self.connect_timeout = timeout
        self.slots = threading.BoundedSemaphore(max_concurrent)
        super().__init__(address, ProbeHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would look up our own name (getfqdn): slow, and unused.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def target_address(self, host: str, port: int) -> str:
        """What to connect to; with an allow-list, the checked address (no second lookup)."""
        if not self.allow:
            return host
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise LookupError(f"cannot resolve {host}: {exc}") from None
        addresses = [str(info[4][0]) for info in infos]
        refused = [a for a in addresses if not is_allowed(a, self.allow)]
        if refused:
            raise BadParameter(
                "host", f"{host} ({refused[0]}) is outside the allow-list", HTTPStatus.FORBIDDEN
            )
        return addresses[0]

    def answer(self, query: str) -> dict[str, Any]:
        host, port, samples = parse_rtt_query(query)
        try:
            target = self.target_address(host, port)
        except LookupError as exc:
            result = RttResult(host, port, [], str(exc))
        else:
            result = measure_connects(target, port, samples, self.connect_timeout)
        return {
            "host": host,
            "port": port,
            "rtt_ms": result.rtt_ms,
            "samples": result.rounded_samples,
            "error": result.error,
        }


class ProbeHandler(BaseHTTPRequestHandler):
    server: ProbeServer
    server_version = "tpc-bench-rtt-probe"
    timeout = 10  # a client that sends nothing does not hold a thread

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/healthz":
            self._send(HTTPStatus.OK, {"status": "ok"})
        elif path == "/rtt":
            self._rtt(query)
        else:
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such path: {path} (/rtt, /healthz)"})

    def _rtt(self, query: str) -> None:
        if not self.server.slots.acquire(blocking=False):
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "busy: try again"})
            return
        try:
            self._send(HTTPStatus.OK, self.server.answer(query))
        except BadParameter as exc:
            self._send(exc.status, {"parameter": exc.parameter, "error": str(exc)})
        finally:
            self.server.slots.release()

    def _send(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)


def serve(
    bind: str,
    port: int,
    *,
    allow: Sequence[Network] = (),
    timeout: float = CONNECT_TIMEOUT,
    max_concurrent: int = MAX_CONCURRENT,
) -> None:
    """Run the probe until SIGTERM / SIGINT; prints `serving on http://ADDR:PORT/` first."""
    server = ProbeServer((bind, port), allow=allow, timeout=timeout, max_concurrent=max_concurrent)

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)  # also as PID 1 in a container
    signal.signal(signal.SIGINT, stop)
    bound = server.server_address
    print(f"serving on http://{_url_host(str(bound[0]))}:{bound[1]}/", flush=True)
    allowed = ", ".join(map(str, allow)) or "all"
    log.info("RTT probe on %s port %s, targets allowed: %s", bound[0], bound[1], allowed)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def serve_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.latency serve",
        description="The RTT probe beside the servers: GET /rtt?host=H&port=P&samples=N.",
    )
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (the node IP)")
    parser.add_argument("--port", type=int, default=PROBE_DEFAULT_PORT, help="0: any free port")
    parser.add_argument(
        "--allow",
        type=parse_network,
        action="append",
        default=[],
        metavar="CIDR",
        help="only measure targets in CIDR (repeatable; default: any target)",
    )
    parser.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT, help="per connect, s")
    parser.add_argument("--max-concurrent", type=int, default=MAX_CONCURRENT)
    args = parser.parse_args(argv)
    if not 0 < args.timeout <= 30:
        parser.error("--timeout must be in (0, 30] seconds")
    if args.max_concurrent < 1:
        parser.error("--max-concurrent must be at least 1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    serve(
        args.bind,
        args.port,
        allow=args.allow,
        timeout=args.timeout,
        max_concurrent=args.max_concurrent,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        return serve_main(argv[1:])
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

"""The RTT probe beside the servers: the same measuring function behind HTTP.

GET /rtt?host=H&port=P&samples=N -> {"host", "port", "rtt_ms", "samples", "error"}
GET /healthz
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import re
import signal
import socket
import threading
import urllib.parse
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from orchestrator.http_service import Answer, HttpService, Route
from orchestrator.latency.connects import (
    CONNECT_TIMEOUT,
    DEFAULT_COUNT,
    RttResult,
    measure_connects,
)
from orchestrator.latency.position import MAX_SAMPLES, url_host

log = logging.getLogger(__name__)

MAX_CONCURRENT = 8  # measurements the probe runs at once; more get 503
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


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


class ProbeServer(HttpService):
    """The RTT probe: answers `/rtt` with `measure_connects` from this host's position."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        allow: Sequence[Network] = (),
        timeout: float = CONNECT_TIMEOUT,
        max_concurrent: int = MAX_CONCURRENT,
    ) -> None:
        self.allow = list(allow)  # empty: every target is allowed
        self.connect_timeout = timeout
        self.slots = threading.BoundedSemaphore(max_concurrent)
        routes: dict[str, Route] = {
            "/rtt": self._rtt,
            "/healthz": lambda query: Answer.json(HTTPStatus.OK, {"status": "ok"}),
        }
        super().__init__(address, routes, name="tpc-bench-rtt-probe")

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

    def answer_rtt(self, query: str) -> dict[str, Any]:
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

    def _rtt(self, query: str) -> Answer:
        if not self.slots.acquire(blocking=False):
            return Answer.json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "busy: try again"})
        try:
            return Answer.json(HTTPStatus.OK, self.answer_rtt(query))
        except BadParameter as exc:
            return Answer.json(exc.status, {"parameter": exc.parameter, "error": str(exc)})
        finally:
            self.slots.release()


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
    print(f"serving on http://{url_host(str(bound[0]))}:{bound[1]}/", flush=True)
    allowed = ", ".join(map(str, allow)) or "all"
    log.info("RTT probe on %s port %s, targets allowed: %s", bound[0], bound[1], allowed)
    try:
        server.serve_forever()
    finally:
        server.server_close()

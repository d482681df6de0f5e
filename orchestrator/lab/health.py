"""Is a node serving? TCP connects to each port, the GridFTP banner, an HTTPS HEAD of the source;
and the wait after start-up until every port is open."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.errors import UserError
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.runtime import Runtime

CONNECT_TIMEOUT = 3.0
READY_TIMEOUT = 30.0


def tcp_open(address: str, port: int, timeout: float = CONNECT_TIMEOUT) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def gridftp_banner(address: str, port: int) -> str:
    with socket.create_connection((address, port), timeout=CONNECT_TIMEOUT) as conn:
        conn.settimeout(CONNECT_TIMEOUT)
        return conn.recv(512).decode(errors="replace").strip()


def client_tls_context(client: ClientCredentials) -> ssl.SSLContext:
    context = ssl.create_default_context(capath=str(client.certdir))
    context.load_cert_chain(str(client.cert), str(client.key))
    return context


def https_source_size(endpoint: Endpoint, client: ClientCredentials, file_size: int) -> int:
    url = f"https://{endpoint.address}:{endpoint.ports['https']}{source_name(file_size)}"
    with httpx.Client(verify=client_tls_context(client), timeout=CONNECT_TIMEOUT) as http:
        response = http.head(url)
    response.raise_for_status()
    return int(response.headers.get("content-length", -1))


def probe_node(endpoint: Endpoint, client: ClientCredentials, file_size: int) -> dict[str, Any]:
    """One node's health: each check is "ok" or a short reason; `ok` is their conjunction."""
    checks: dict[str, str] = {}
    for service, port in sorted(endpoint.ports.items()):
        checks[f"{service}_port"] = "ok" if tcp_open(endpoint.address, port) else "closed"
    try:
        banner = gridftp_banner(endpoint.address, endpoint.ports["gridftp"])
        checks["gridftp_banner"] = "ok" if banner.startswith("220") else f"unexpected: {banner}"
    except OSError as exc:
        checks["gridftp_banner"] = f"error: {exc}"
    try:
        size = https_source_size(endpoint, client, file_size)
        checks["https_source"] = "ok" if size == file_size else f"size {size} != {file_size}"
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        checks["https_source"] = f"error: {exc}"
    return {
        "ok": all(v == "ok" for v in checks.values()),
        "checks": checks,
        "checked": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def wait_until_serving(record: LabRun, servers: Runtime, endpoints: Sequence[Endpoint]) -> None:
    """Every port of every node accepts connections, or say which server died and why."""
    deadline = time.monotonic() + READY_TIMEOUT
    pending = [(e, service, port) for e in endpoints for service, port in e.ports.items()]
    while pending:
        failure = servers.failure_detail(record)
        if failure:
            raise UserError(failure)
        pending = [item for item in pending if not tcp_open(item[0].address, item[2], 1.0)]
        if pending and time.monotonic() > deadline:
            endpoint, service, port = pending[0]
            raise UserError(
                f"{endpoint.name} does not serve {service} on {endpoint.address}:{port} after "
                f"{READY_TIMEOUT:.0f}s; see the logs in {Path(record.path).parent / 'nodes'}"
            )
        if pending:
            time.sleep(0.2)

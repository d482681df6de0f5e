"""One small HTTP service for what the orchestrator's processes answer over HTTP (the RTT
probe's /rtt, the service's and the signer's /metrics and /healthz, the lab's token issuer):
GET routes on a threaded server of the standard library, each route a function of the query
string; over TLS when given a server context.

    service = HttpService(("127.0.0.1", 0), {"/healthz": lambda query: Answer.json(200, {...})})
    service.start()          # on its own thread; service.port is the bound port
    service.close()
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str

    @classmethod
    def json(cls, status: int, payload: Mapping[str, Any]) -> Answer:
        return cls(status, json.dumps(payload).encode(), "application/json")


Route = Callable[[str], Answer]  # the query string (without "?") -> the answer


class HttpService(ThreadingHTTPServer):
    """GET routes by path; anything else is 404 naming the paths there are."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        routes: Mapping[str, Route],
        *,
        name: str = "tpc-bench",
        log_requests: bool = True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.routes = dict(routes)
        self.log_requests = log_requests
        self.tls = tls
        self._thread: threading.Thread | None = None
        handler = type("Handler", (_Handler,), {"server_version": name})
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would look up our own name (getfqdn): slow, and unused.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, client = super().get_request()
        if self.tls is not None:
            # The handshake happens on the request's own thread (at its first read, under
            # the handler's timeout), so a silent client never stalls the accept loop.
            connection = self.tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, client

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def answer(self, path: str, query: str) -> Answer:
        route = self.routes.get(path)
        if route is None:
            return Answer.json(404, {"error": f"no such path: {path} ({', '.join(self.routes)})"})
        return route(query)

    def start(self, thread_name: str = "http-service") -> HttpService:
        self._thread = threading.Thread(target=self.serve_forever, name=thread_name, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: HttpService
    timeout = 10  # a client that sends nothing does not hold a thread

    def handle(self) -> None:
        try:
            super().handle()
        except (ssl.SSLError, OSError) as exc:  # a client that fails the TLS handshake
            log.info("%s: %s", self.address_string(), exc)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        try:
            answer = self.server.answer(path, query)
        except Exception:  # a bug in a route: 500 for this request, the service lives on
            log.exception("GET %s failed", self.path)
            answer = Answer.json(500, {"error": "internal error"})
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(answer.body)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.log_requests:
            log.info("%s %s", self.address_string(), format % args)

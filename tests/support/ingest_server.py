"""A tiny real HTTP server that ingests measurements the way the webapp's API does.

Used until (and besides) the real webapp: real sockets, the same contract — POST
/api/v1/measurements/ is idempotent on uuid (201 created, 200 replay, 409 same uuid with
different content), a measurement's unknown campaign uuid creates a running "cli" campaign,
POST /api/v1/campaigns/ creates a pending "run now" campaign with a server-made uuid, and
PATCH /api/v1/campaigns/<uuid>/ updates one (404 if unknown). `force_status`
makes every request answer with a given status, to play a broken or refusing server.
The fixtures `ingest` (a server per test) and `spool` (the reporter's, in the test's
temporary directory) are every test folder's (tests/conftest.py).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orchestrator.report.spool import Spool


class IngestServer:
    def __init__(self, port: int = 0, token: str | None = "secret-token") -> None:
        self.token = token
        self.measurements: dict[str, dict[str, Any]] = {}
        self.campaigns: dict[str, dict[str, Any]] = {}
        self.posts = 0
        self.force_status: int | None = None
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> IngestServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict[str, Any]:
                return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

            def _guard(self) -> bool:
                if server.force_status is not None:
                    self._body()
                    self._answer(server.force_status, {"detail": "forced"})
                    return False
                if server.token and self.headers.get("Authorization") != f"Token {server.token}":
                    self._body()
                    self._answer(401, {"detail": "Invalid token."})
                    return False
                return True

            def do_POST(self) -> None:
                if not self._guard():
                    return
                body = self._body()
                with server._lock:
                    server.posts += 1
                    if self.path == "/api/v1/measurements/":
                        if "src" not in body:
                            return self._answer(400, {"src": ["This field is required."]})
                        known = server.measurements.get(body["uuid"])
                        if known is None:
                            server.measurements[body["uuid"]] = body
                            campaign = body.get("campaign")
                            if campaign and campaign not in server.campaigns:
                                server.campaigns[campaign] = {
                                    "uuid": campaign,
                                    "state": "running",
                                    "trigger": "cli",
                                }
                            return self._answer(201, body)
                        return self._answer(200 if known == body else 409, known)
                    if self.path == "/api/v1/campaigns/":
                        made = {
                            "uuid": str(uuid.uuid4()),
                            "state": "pending",
                            "trigger": body.get("trigger", "manual"),
                        }
                        server.campaigns[made["uuid"]] = made
                        return self._answer(201, made)
                self._answer(404, {"detail": "Not found."})

            def do_PATCH(self) -> None:
                if not self._guard():
                    return
                body = self._body()
                key = self.path.rstrip("/").rsplit("/", 1)[-1]
                with server._lock:
                    if key not in server.campaigns:
                        return self._answer(404, {"detail": "Not found."})
                    allowed = {"state", "started", "finished", "schedule"}
                    server.campaigns[key].update({k: v for k, v in body.items() if k in allowed})
                    self._answer(200, server.campaigns[key])

            def do_GET(self) -> None:
                with server._lock:
                    pending = [c for c in server.campaigns.values() if c.get("state") == "pending"]
                self._answer(200, {"results": pending} if "state=pending" in self.path else [])

        return Handler


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ingest() -> Iterator[IngestServer]:
    with IngestServer() as server:
        yield server


@pytest.fixture
def spool(tmp_path: Path) -> Spool:
    return Spool(tmp_path / "spool")

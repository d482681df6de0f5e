"""The webapp image, run with podman on the host network against a PostgreSQL database of
its own on the test suite's server (created here, dropped afterwards)."""

from __future__ import annotations

import os
import socket
import time
import uuid

import httpx
import psycopg
import pytest

from orchestrator.lab.podman_runtime import podman
from support.podman import run_podman

SERVER_URL = os.environ.get(
    "TPCBENCH_TEST_DATABASE_URL", "postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebappContainer:
    """The webapp image on the host network, with a database of its own."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.name = f"tpcbench-test-webapp-{uuid.uuid4().hex[:8]}"
        self.database = f"tpcbench_img_{uuid.uuid4().hex[:10]}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        base, _, _ = SERVER_URL.rpartition("/")
        self.env = {
            "DATABASE_URL": f"{base}/{self.database}",
            "DJANGO_SECRET_KEY": "image-tests",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "TPCBENCH_WEB_BIND": f"127.0.0.1:{self.port}",
        }

    def options(self) -> list[str]:
        return ["--network", "host", *[f"--env={k}={v}" for k, v in self.env.items()]]

    def manage(self, *argv: str) -> str:
        return run_podman(
            "run", "--rm", *self.options(), self.image, "python3", "manage.py", *argv
        ).stdout

    def __enter__(self) -> WebappContainer:
        with psycopg.connect(SERVER_URL, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')
        return self

    def serve(self) -> None:
        run_podman("run", "--detach", "--name", self.name, "--no-healthcheck", *self.options(),
                   self.image)  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/api/v1/nodes/", timeout=2)
                return
            except httpx.HTTPError:
                time.sleep(0.3)
        logs = podman("logs", self.name)
        pytest.fail(f"the webapp image did not answer:\n{logs.stdout}{logs.stderr}")

    def __exit__(self, *exc: object) -> None:
        podman("rm", "--force", "--time", "5", self.name)
        with psycopg.connect(SERVER_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')

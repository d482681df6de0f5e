"""The webapp image, run with podman on the host network against a PostgreSQL database of
its own on the test suite's server (created here, dropped afterwards)."""

from __future__ import annotations

import time
import uuid

import httpx
import pytest

from orchestrator.lab.podman_runtime import podman
from tests.support.podman import run_podman
from tests.support.test_database import drop_database, free_port, new_database


class WebappContainer:
    """The webapp image on the host network, with a database of its own."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.name = f"tpcbench-test-webapp-{uuid.uuid4().hex[:8]}"
        self.database, self.database_url = "", ""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
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
        self.database, self.database_url = new_database("tpcbench_img")
        self.env["DATABASE_URL"] = self.database_url
        return self

    def serve(self) -> None:
        run_podman("run", "--detach", "--name", self.name, "--no-healthcheck", *self.options(),
                   self.image)  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        logs = podman("logs", self.name)
        pytest.fail(f"the webapp image did not answer:\n{logs.stdout}{logs.stderr}")

    def __exit__(self, *exc: object) -> None:
        podman("rm", "--force", "--time", "5", self.name)
        drop_database(self.database)

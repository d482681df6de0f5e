"""The webapp and orchestrator images, run for real: the webapp against the test suite's
PostgreSQL, the orchestrator's one-shot campaign against the podman lab, landing in it."""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import PodmanLab, run_podman

from orchestrator.lab.inventory import LabInventory, save_inventory
from orchestrator.lab.podman_runtime import podman
from orchestrator.servers import layout

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


@pytest.fixture(scope="module")
def webapp(images: dict[str, str]) -> Iterator[WebappContainer]:
    with WebappContainer(images["webapp"]) as container:
        migrated = container.manage("migrate", "--noinput")
        assert "Applying results.0001_initial... OK" in migrated
        container.serve()
        yield container


def test_the_webapp_image_serves_the_grid_and_the_api(webapp: WebappContainer) -> None:
    page = httpx.get(webapp.url + "/", timeout=10)
    assert page.status_code == 200 and "tpc-bench" in page.text
    api = httpx.get(webapp.url + "/api/v1/measurements/", timeout=10)
    assert api.status_code == 200 and api.json()["count"] == 0
    # static files were collected at build time and are served by whitenoise
    css = httpx.get(webapp.url + "/static/dashboard/dashboard.css", timeout=10)
    assert css.status_code == 200
    top = run_podman("top", webapp.name, "huser", "args").stdout.splitlines()[1:]
    assert top and all(line.split()[0] == str(layout.SERVER_UID) for line in top), top


def test_the_orchestrator_image_shows_its_help(images: dict[str, str]) -> None:
    result = run_podman("run", "--rm", "--network", "none", images["orchestrator"], "--help")
    assert "usage: tpcbench" in result.stdout and "campaign" in result.stdout


def container_inventory(lab: LabInventory, workdir: Path) -> Path:
    """The lab inventory as the orchestrator container sees it: credentials where a
    cluster mounts them, readable by the image's non-root user."""
    credentials = workdir / "credentials"
    credentials.mkdir()
    shutil.copyfile(lab.client.cert, credentials / "usercert.pem")
    shutil.copyfile(lab.client.key, credentials / "userkey.pem")
    for item in (credentials, credentials / "usercert.pem", credentials / "userkey.pem"):
        os.chown(item, layout.SERVER_UID, layout.SERVER_GID)
    (credentials / "userkey.pem").chmod(0o600)
    inside = LabInventory.from_json(
        {
            **lab.to_json(),
            "client": {
                "cert": str(layout.HOST_CREDENTIALS / "usercert.pem"),
                "key": str(layout.HOST_CREDENTIALS / "userkey.pem"),
                "certdir": str(layout.CERTDIR),
            },
        }
    )
    save_inventory(inside, workdir / "state" / "inventory.json")
    return credentials


def test_a_campaign_from_the_orchestrator_image_lands_in_the_webapp(
    images: dict[str, str], podman_lab: PodmanLab, webapp: WebappContainer, tmp_path: Path
) -> None:
    token = webapp.manage("create_api_token", "image-tests").strip().split()[-1]
    credentials = container_inventory(podman_lab.inventory, tmp_path)
    state = tmp_path / "state"
    (state / "token").write_text(token)
    os.chown(state, layout.SERVER_UID, layout.SERVER_GID)
    os.chown(state / "token", layout.SERVER_UID, layout.SERVER_GID)
    certdir = podman_lab.home / "lab" / "certificates"
    result = run_podman(
        "run", "--rm", "--network", "host", "--read-only", "--cap-drop", "all",
        "--volume", f"{state}:/var/lib/tpc-bench",
        "--volume", f"{credentials}:{layout.HOST_CREDENTIALS}:ro",
        "--volume", f"{certdir}:{layout.CERTDIR}:ro",
        images["orchestrator"], "campaign", "run",
        "--inventory", "/var/lib/tpc-bench/inventory.json",
        "--protocols", "https,gridftp", "--streams", "1", "--transfers", "2",
        "--report-to", webapp.url, "--token-file", "/var/lib/tpc-bench/token",
        timeout=600,
    )  # fmt: skip
    measurements = httpx.get(webapp.url + "/api/v1/measurements/?limit=50", timeout=10).json()
    rows = measurements["results"]
    # 2 ordered pairs x 2 protocols x 1 stream setting
    assert len(rows) == 4, result.stdout + result.stderr
    assert {(r["src"], r["dst"], r["protocol"]) for r in rows} == {
        (a, b, p) for a, b in (("lab-1", "lab-2"), ("lab-2", "lab-1")) for p in ("https", "gridftp")
    }
    assert all(r["succeeded"] == 2 and r["failed"] == 0 for r in rows), rows
    assert all(r["rtt_ms"] is not None for r in rows)  # asked from the probe containers

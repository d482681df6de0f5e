"""The webapp and orchestrator images, run for real: the webapp against the test suite's
PostgreSQL, the orchestrator's one-shot campaign against the podman lab, landing in it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.lab.inventory import LabInventory, save_inventory
from orchestrator.servers import layout
from tests.support.podman import run_podman
from tests.support.podman_lab import PodmanLab
from tests.support.webapp_container import WebappContainer


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

"""What each built image holds and how it runs: the project version, the non-root user, the
servers' programs where the configuration expects them (and iperf3 beside XRootD), nothing of
Django in the servers."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from orchestrator.servers import layout
from orchestrator.servers.xrootd import XrootdSettings
from tests.support.podman import run_podman


def image_config(image: str) -> dict:
    return json.loads(run_podman("image", "inspect", image).stdout)[0]["Config"]


def which(image: str, *programs: str) -> list[str]:
    found = run_in(image, "sh", "-c", 'for p in "$@"; do command -v "$p"; done', "sh", *programs)
    return found.split()


def run_in(image: str, *command: str) -> str:
    return run_podman(
        "run", "--rm", "--network", "none", "--entrypoint", command[0], image, *command[1:]
    ).stdout  # fmt: skip


@pytest.mark.parametrize("component", ["xrootd", "gridftp", "orchestrator", "webapp"])
def test_every_image_is_versioned_and_runs_as_the_unprivileged_user(
    images: dict[str, str], component: str
) -> None:
    version = importlib.metadata.version("tpc-bench")
    assert images[component].endswith(f"/{component}:{version}")
    config = image_config(images[component])
    assert config["User"] == f"{layout.SERVER_UID}:{layout.SERVER_GID}"
    assert config["Labels"]["org.opencontainers.image.version"] == version
    assert config["Entrypoint"][:2] == ["/usr/bin/tini", "--"]  # a real init as PID 1
    assert run_in(images[component], "id", "-u").strip() == str(layout.SERVER_UID)


def test_the_server_images_hold_the_servers_not_the_webapp(images: dict[str, str]) -> None:
    xrdcp = XrootdSettings.__dataclass_fields__["xrdcp_path"].default
    assert which(images["xrootd"], "xrootd", "xrdcp") == ["/usr/bin/xrootd", xrdcp]
    # the chart's iperf3 sidecar serves link baselines from the XRootD image
    assert run_in(images["xrootd"], "iperf3", "--version").startswith("iperf 3.12 ")
    assert which(images["gridftp"], "globus-gridftp-server") == ["/usr/sbin/globus-gridftp-server"]
    for component in ("xrootd", "gridftp"):
        code = (
            "import importlib.util as u, orchestrator.servers, orchestrator.latency, cryptography;"
            "print(u.find_spec('django') is None, u.find_spec('kubernetes') is None)"
        )
        assert run_in(images[component], "python3", "-c", code).split() == ["True", "True"]
    help_text = run_in(images["xrootd"], "python3", "-m", "orchestrator.latency", "serve", "--help")
    assert "--allow CIDR" in help_text  # the RTT probe the chart runs beside the servers


def test_the_orchestrator_image_has_the_transfer_clients(images: dict[str, str]) -> None:
    found = which(images["orchestrator"], "globus-url-copy", "xrdcp")
    assert found == ["/usr/bin/globus-url-copy", "/usr/bin/xrdcp"]


def test_the_webapp_image_collected_its_static_files(images: dict[str, str]) -> None:
    listing = run_in(images["webapp"], "ls", "/app/static")
    assert "staticfiles.json" in listing.split()  # whitenoise's manifest
    assert "dashboard" in listing.split()

"""The Dockerfiles: hadolint-clean, and the OSG flavour (not buildable here: no AlmaLinux base
is reachable) runs what the debian flavour runs, as the same user, on the same ports and
paths the chart mounts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser

from orchestrator.lab.preflight import PROGRAMS
from orchestrator.servers import layout

IMAGES = Path(__file__).resolve().parents[2] / "images"
DEBIAN = IMAGES / "Dockerfile"
OSG = IMAGES / "Dockerfile.osg"
# What a server image's stage must say the same way in both flavours.
CONTRACT = ("USER", "WORKDIR", "EXPOSE", "HEALTHCHECK", "ENTRYPOINT", "CMD")


def stages(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its (instruction, value) pairs, comments left out."""
    parsed = DockerfileParser(fileobj=path.open("rb"))
    result: dict[str, list[tuple[str, str]]] = {}
    current = None
    for item in parsed.structure:
        instruction, value = item["instruction"], " ".join(item["value"].split())
        if instruction == "FROM":
            current = value.split(" AS ")[-1]
            result[current] = []
        elif instruction != "COMMENT" and current is not None:
            result[current].append((instruction, value))
    return result


@pytest.mark.parametrize("dockerfile", [DEBIAN, OSG], ids=["debian", "osg"])
def test_hadolint_finds_nothing(dockerfile: Path) -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    result = subprocess.run(
        [str(hadolint), "--no-color", str(dockerfile)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("target", ["xrootd", "gridftp"])
def test_both_flavours_run_the_same_server_the_same_way(target: str) -> None:
    debian, osg = stages(DEBIAN)[target], stages(OSG)[target]

    def contract(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(i, v) for i, v in instructions if i in CONTRACT]

    assert contract(osg) == contract(debian)
    assert ("USER", f"{layout.SERVER_UID}:{layout.SERVER_GID}") in debian
    assert ("WORKDIR", str(layout.RUN_DIR)) in debian
    entrypoint = dict(debian)["ENTRYPOINT"]
    assert "orchestrator.servers" in entrypoint  # the one configuration source


def test_both_flavours_make_the_same_user_and_directories() -> None:
    for path in (DEBIAN, OSG):
        runtime = " ".join(v for i, v in stages(path)["python-runtime"] if i == "RUN")
        assert f"--uid {layout.SERVER_UID} --gid {layout.SERVER_USER}" in runtime, path
        assert f"--gid {layout.SERVER_GID} {layout.SERVER_USER}" in runtime, path
        owned = f"install -d -o {layout.SERVER_UID} -g {layout.SERVER_GID} -m 0755"
        assert f"{owned} {layout.DATA_ROOT} {layout.RUN_DIR}" in runtime, path
        assert f"{layout.CERTDIR} {layout.HOST_CREDENTIALS} {layout.GRID_MAPFILE_DIR}" in runtime, (
            path
        )
        env = [v for i, v in stages(path)["python-runtime"] if i == "ENV"]
        assert "PATH=/opt/tpc-bench/bin:$PATH" in env, path


@pytest.mark.parametrize(
    ("target", "programs"),
    [("xrootd", ("xrootd", "xrdcp")), ("gridftp", ("globus-gridftp-server",))],
)
def test_both_flavours_install_the_packages_the_servers_run(
    target: str, programs: tuple[str, ...]
) -> None:
    # Debian and EL name these packages alike (xrootd-server, xrootd-client,
    # globus-gridftp-server-progs), so the lab's program -> package table serves both.
    for path in (DEBIAN, OSG):
        runs = " ".join(v for i, v in stages(path)[target] if i == "RUN")
        for program in programs:
            assert PROGRAMS[program] in runs, f"{path.name} {target}: {PROGRAMS[program]}"


def test_both_flavours_install_the_token_plugin_the_xrootd_config_loads() -> None:
    # the same config (orchestrator.servers) loads libXrdAccSciTokens when given an issuer
    packages = {DEBIAN: "xrootd-scitokens-plugins=5.5.3-1", OSG: "xrootd-scitokens-"}
    for path, package in packages.items():
        runs = " ".join(v for i, v in stages(path)["xrootd"] if i == "RUN")
        assert package in runs, path.name


def test_the_osg_flavour_uses_the_osg_24_repository_and_epel() -> None:
    runtime = stages(OSG)["python-runtime"]
    text = " ".join(v for _, v in runtime)
    assert "osg/24-main/osg-24-main-el9-release-latest.rpm" in text
    assert "epel-release" in text and "--set-enabled crb" in text


def test_the_release_workflow_builds_targets_that_exist() -> None:
    import yaml

    workflow = yaml.safe_load((IMAGES.parent / ".github/workflows/release-images.yml").read_text())
    builds = workflow["jobs"]["images"]["strategy"]["matrix"]["include"]
    assert {b["image"] for b in builds} == {"xrootd", "gridftp", "orchestrator", "webapp"}
    for build in builds:
        dockerfile = IMAGES.parent / build["dockerfile"]
        assert build["image"] in stages(dockerfile), build
        # the server images a site pulls are the OSG flavour, as the paper's were
        flavour = "osg" if build["image"] in ("xrootd", "gridftp") else "debian"
        assert dockerfile == (OSG if flavour == "osg" else DEBIAN)

"""`tpcbench lab up --runtime podman`: every lab node's servers run from our images.

Real xrootd and globus-gridftp-server in containers of the debian flavour, inside the nodes'
network namespaces, transfers checked byte for byte on the host side of /data.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.errors import UserError
from orchestrator.lab import LabNetwork, lab_status, start_lab, stop_lab
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.network import existing_namespaces
from orchestrator.lab.podman_runtime import podman
from orchestrator.lab.run_record import LabRun
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest, destination_name
from orchestrator.servers.layout import SERVER_UID
from orchestrator.servers.source_file import source_path, stored_adler32
from tests.support.podman import run_podman
from tests.support.podman_lab import LAB_FILE_SIZE, PodmanLab
from tests.support.refusals import (
    Client,
    gsi_env,
    gsiftp_url,
    http_list,
    http_put,
    https_url,
    root_url,
    run,
)

pytestmark = pytest.mark.lab


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("protocol", "streams"),
    [("https", 1), ("https", 8), ("gridftp", 1), ("gridftp", 8), ("root", 1)],
)
def test_tpc_between_two_containers_delivers_the_exact_bytes(
    podman_lab: PodmanLab, protocol: str, streams: int
) -> None:
    src, dst = podman_lab.inventory.nodes
    assert (src.data_root, dst.data_root) == ("/data", "/data")  # the servers' own view
    record = asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                src, dst, protocol, streams, transfers=3, file_size=LAB_FILE_SIZE
            ),
            creds=podman_lab.inventory.client, timeout=120, keep_files=True,
        )
    )  # fmt: skip
    assert (record.succeeded, record.failed) == (3, 0), [t.message for t in record.transfers]
    expected = sha256(source_path(podman_lab.host_data_root(src.name), LAB_FILE_SIZE))
    for transfer in record.transfers:
        name = destination_name(record.uuid, transfer.index, record.protocol).lstrip("/")
        written = podman_lab.host_data_root(dst.name) / name
        assert sha256(written) == expected
        assert written.stat().st_uid == SERVER_UID  # written by the server's own user
        written.unlink()
    # the RTT comes from the probe container in lab-1's namespace
    assert record.rtt_ms is not None and 0 < record.rtt_ms < 50


@pytest.mark.parametrize("protocol", ["https", "gridftp", "root"])
def test_the_containers_servers_take_the_checksum_step(
    podman_lab: PodmanLab, protocol: str
) -> None:
    """The image's servers answer digests (XRootD: `xrootd.chksum`, from the one
    configuration; GridFTP: CKSM), and the source's stored digest is the content's."""
    src, dst = podman_lab.inventory.nodes
    record = asyncio.run(
        run_measurement(
            MeasurementRequest.between(
                src, dst, protocol, 2, checksum="adler32", transfers=2, file_size=LAB_FILE_SIZE
            ),
            creds=podman_lab.inventory.client, timeout=120,
        )
    )  # fmt: skip
    assert (record.succeeded, record.failed) == (2, 0), [t.message for t in record.transfers]
    assert all(t.phases["checksum"] > 0 for t in record.transfers)
    source = source_path(podman_lab.host_data_root(src.name), LAB_FILE_SIZE)
    assert stored_adler32(source) == zlib.adler32(source.read_bytes())


def test_a_missing_source_is_a_not_found_failure(podman_lab: PodmanLab) -> None:
    src, dst = podman_lab.inventory.nodes
    record = asyncio.run(
        run_measurement(
            # no source file of this size
            MeasurementRequest.between(
                src, dst, "https", 1, transfers=2, file_size=LAB_FILE_SIZE + 1
            ),
            creds=podman_lab.inventory.client, timeout=60,
        )
    )  # fmt: skip
    assert record.succeeded == 0
    assert {t.error_class for t in record.transfers} == {"not-found"}


def test_servers_in_the_containers_are_not_root(podman_lab: PodmanLab) -> None:
    record = LabRun.load(podman_lab.home / "lab" / "run.json")
    assert {c.service for c in record.containers} == {"xrootd", "gridftp", "probe"}
    for container in record.containers:
        top = run_podman("top", container.name, "huser", "args").stdout.splitlines()[1:]
        assert top, f"nothing runs in {container.name}"
        for line in top:
            huser = line.split()[0]
            assert huser == str(SERVER_UID), f"{container.name}: {line}"
        servers = {"xrootd": "xrootd -n", "gridftp": "globus-gridftp-server", "probe": "serve"}
        assert any(servers[container.service] in line for line in top), top


def test_lab_status_reports_each_container(podman_lab: PodmanLab) -> None:
    inventory = lab_status(podman_lab.home)
    assert inventory.runtime == "podman"
    for node in inventory.nodes:
        checks = inventory.health[node.name]["checks"]
        assert {k: v for k, v in checks.items() if k.endswith("_container")} == {
            "xrootd_container": "ok",
            "gridftp_container": "ok",
            "probe_container": "ok",
        }
        assert node.ports["probe"] == 9106


def test_the_images_healthcheck_passes_in_a_running_server(podman_lab: PodmanLab) -> None:
    record = LabRun.load(podman_lab.home / "lab" / "run.json")
    for container in record.containers:
        if container.service == "probe":
            continue
        image = run_podman("inspect", "--format", "{{.ImageName}}", container.name).stdout
        spec = json.loads(
            run_podman("image", "inspect", "--format", "{{json .HealthCheck}}", image.strip())
            .stdout
        )  # fmt: skip
        assert spec["Test"][0] == "CMD"
        run_podman("exec", container.name, *spec["Test"][1:])  # exit 0 or the test fails


def test_lab_down_removes_its_containers_namespaces_and_mounts(images: dict[str, str]) -> None:
    network = LabNetwork(prefix="tpcbd", subnet_offset=175)
    home = Path(tempfile.mkdtemp(prefix="tpcbench-imagelab-down-"))
    os.chmod(home, 0o755)
    # someone else's container with a name like ours must survive `lab down`
    bystander = "tpcbd-bystander"
    run_podman(
        "run", "--detach", "--name", bystander, "--network", "none", "--no-healthcheck",
        "--entrypoint", "sleep", images["xrootd"], "600",
    )  # fmt: skip
    try:
        CertificateAuthority.init(home / "ca")
        start_lab(home, 1, 1 << 20, network=network, runtime="podman")
        record = LabRun.load(home / "lab" / "run.json")
        ids = [
            run_podman("inspect", "--format", "{{.Id}}", c.name).stdout.strip()
            for c in record.containers
        ]
        assert len(ids) == 3
        assert any(i in Path("/proc/mounts").read_text() for i in ids)  # overlay roots
        # tini as PID 1 hands SIGTERM to xrootd, which then exits by itself: podman stop does
        # not have to fall back to SIGKILL (exit status 137)
        xrootd = next(c.name for c in record.containers if c.service == "xrootd")
        run_podman("stop", "--time", "30", xrootd)
        exit_code = run_podman("inspect", "--format", "{{.State.ExitCode}}", xrootd).stdout
        assert exit_code.strip() != "137"

        done = stop_lab(home)

        assert sum(line.startswith("removed container") for line in done) == 3
        names = run_podman("ps", "--all", "--format", "{{.Names}}").stdout.split()
        assert not any(c.name in names for c in record.containers)
        assert bystander in names
        mounts = Path("/proc/mounts").read_text()
        assert not any(i in mounts for i in ids)
        assert "tpcbd-" not in mounts  # no netns bind mount left
        assert not {n for n in existing_namespaces() if n.startswith("tpcbd-")}
        assert not lab_data_dir("tpcbd").exists()
    finally:
        stop_lab(home)
        podman("rm", "--force", "--time", "0", bystander)
        shutil.rmtree(home, ignore_errors=True)


def test_a_container_under_a_lab_name_that_is_not_ours_stops_lab_up_and_survives(
    images: dict[str, str],
) -> None:
    network = LabNetwork(prefix="tpcbx", subnet_offset=185)
    home = Path(tempfile.mkdtemp(prefix="tpcbench-imagelab-taken-"))
    os.chmod(home, 0o755)
    taken = "tpcbx-lab-1-gridftp"  # the name lab up would give node 1's gridftp container
    run_podman(
        "run", "--detach", "--name", taken, "--network", "none", "--no-healthcheck",
        "--entrypoint", "sleep", images["xrootd"], "600",
    )  # fmt: skip
    try:
        CertificateAuthority.init(home / "ca")
        with pytest.raises(UserError, match=f"a container named {taken} already exists"):
            start_lab(home, 1, 1 << 20, network=network, runtime="podman")
        names = run_podman("ps", "--all", "--format", "{{.Names}}").stdout.split()
        assert taken in names  # the rollback removed what the lab started, not this
        assert "tpcbx-lab-1-xrootd" not in names
        assert not (home / "lab" / "run.json").exists()
    finally:
        stop_lab(home)
        podman("rm", "--force", "--time", "0", taken)
        shutil.rmtree(home, ignore_errors=True)


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_without_podman_lab_up_says_what_to_install(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path), "TPCBENCH_HOME": str(tmp_path / "home")}
    result = run_cli("lab", "up", "--nodes", "1", "--runtime", "podman", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "needs podman" in lines[0] and "make system-deps" in lines[0]


def test_without_the_images_lab_up_says_to_build_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    CertificateAuthority.init(home / "ca")
    env = {
        **os.environ,
        "TPCBENCH_HOME": str(home),
        "TPCBENCH_IMAGE_PREFIX": "localhost/tpc-bench-never-built",
    }
    result = run_cli("lab", "up", "--nodes", "1", "--runtime", "podman", env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "localhost/tpc-bench-never-built/xrootd" in lines[0]
    assert lines[0].endswith("is not built; build it with: make images")
    assert not (home / "lab" / "run.json").exists()


def test_the_containers_servers_refuse_strangers(podman_lab: PodmanLab, tmp_path: Path) -> None:
    """The images run the same secure configuration (tests/lab/test_lab_refusals.py has
    every case): anonymous clients and a certificate of ours that is not the orchestrator's
    can write nothing over HTTPS, root:// or GridFTP, nor list."""

    dst = podman_lab.inventory.nodes[1]
    ours = podman_lab.inventory.client
    alice = CertificateAuthority.load(podman_lab.home / "ca").issue_client("alice")
    payload = tmp_path / "payload"
    payload.write_text("not from the orchestrator\n")
    strangers = [
        Client("anonymous", None, None, ours.certdir),
        Client("alice", alice.cert, alice.key, ours.certdir),
    ]
    for client in strangers:
        name = f"/tpcbench-{client.name}"
        for answer in (
            http_put(client, https_url(dst, name), payload),
            http_list(client, https_url(dst, "/")),
        ):
            assert answer.code in (401, 403), f"{client.name}: {answer}"
        env = gsi_env(client, "lab-*")
        answer = run(["xrdcp", "-f", str(payload), root_url(dst, name)], env)
        assert answer.code != 0 and "Auth failed" in answer.text, f"{client.name}: {answer}"
        target = f"{dst.data_root}/tpcbench-gridftp-{client.name}"
        answer = run(["globus-url-copy", f"file://{payload}", gsiftp_url(dst, target, client)], env)
        assert answer.code != 0 and "530" in answer.text, f"{client.name}: {answer}"
        assert not (podman_lab.host_data_root(dst.name) / name.lstrip("/")).exists()

"""`python -m orchestrator.servers xrootd --cluster-role ...`: a site's redirector and its data
servers from the container entrypoint, rendered and run (xrootd and cmsd as two processes, as
the chart's two containers run them)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.servers import ClusterPlace, XrootdSettings, layout, render_xrootd_config
from orchestrator.servers.access import dn_prefix, new_macaroon_secret, render_xrootd_gridmap

SERVER_USER = "tpcbench"  # the lab's unprivileged account (xrootd refuses to run as root)
ADDRESS = "127.0.0.1"
# tests/servers/redirector_cluster.py has 19600-19699, tests/support/two_nodes.py below
MANAGER_PORT, MANAGER_CMS, SERVER_PORT = 19740, 19741, 19742
PATHS = ("--data-root", "/data", "--run-dir", "/run/x", "--host-cert", "/pki/c.pem",
         "--host-key", "/pki/k.pem", "--certdir", "/pki/ca")  # fmt: skip


def run_module(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.servers", *args],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip


def settings(port: int, https_port: int, place: ClusterPlace) -> XrootdSettings:
    return XrootdSettings(
        name="n1",
        data_root=Path("/data"),
        run_dir=Path("/run/x"),
        host_cert=Path("/pki/c.pem"),
        host_key=Path("/pki/k.pem"),
        certdir=Path("/pki/ca"),
        gridmap=layout.XROOTD_GRIDMAP,
        macaroon_secret=layout.MACAROON_SECRET,
        root_port=port,
        https_port=https_port,
        cluster=place,
    )


# -- rendered -----------------------------------------------------------------------------------


def test_without_cluster_options_the_config_is_the_standalone_servers() -> None:
    plain = run_module("xrootd", "--name", "n1", *PATHS)
    explicit = run_module("xrootd", "--name", "n1", *PATHS, "--cluster-role", "standalone")
    assert plain.returncode == explicit.returncode == 0, plain.stderr + explicit.stderr
    assert (
        plain.stdout
        == explicit.stdout
        == render_xrootd_config(settings(1094, 8443, ClusterPlace()))
    )
    assert "all.role" not in plain.stdout


def test_a_data_server_subscribes_to_the_manager_it_is_given() -> None:
    result = run_module(
        "xrootd", "--name", "n1", *PATHS, "--cluster-role", "server",
        "--manager", "lab-redirector-a.tpc.svc:1213", "--https-port", "1094",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    place = ClusterPlace(role="server", upstream="lab-redirector-a.tpc.svc:1213")
    assert result.stdout == render_xrootd_config(settings(1094, 1094, place))
    assert "all.manager lab-redirector-a.tpc.svc:1213" in result.stdout.splitlines()


def test_a_manager_listens_on_its_cms_port_at_its_own_address() -> None:
    result = run_module(
        "xrootd", "--name", "n1", *PATHS, "--cluster-role", "manager",
        "--manager", "10.99.1.2:1213", "--root-port", "1095", "--https-port", "1095",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    place = ClusterPlace(role="manager", address="10.99.1.2", cms_port=1213)
    assert result.stdout == render_xrootd_config(settings(1095, 1095, place))
    other = run_module(
        "xrootd", "--name", "n1", *PATHS, "--cluster-role", "manager",
        "--manager", "10.99.1.2:1213", "--cms-port", "3121", "--https-port", "1094",
    )  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert "xrd.port 3121 if exec cmsd" in other.stdout.splitlines()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--cluster-role", "server", "--https-port", "1094"], "needs --manager HOST:PORT"),
        (["--cluster-role", "server", "--manager", "rdr"], "'rdr' is not HOST:PORT"),
        (["--cluster-role", "server", "--manager", "rdr:1213"], "https_port 8443 must be"),
        (["--manager", "rdr:1213"], "need --cluster-role manager or server"),
        (["--program", "cmsd"], "need --cluster-role manager or server"),
        (
            [
                "--cluster-role",
                "server",
                "--manager",
                "r:1",
                "--cms-port",
                "2",
                "--https-port",
                "1094",
            ],
            "--cms-port is a manager's",
        ),
    ],
)
def test_wrong_cluster_options_are_one_line(options: list[str], message: str) -> None:
    result = run_module("xrootd", "--name", "n1", *PATHS, *options)
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- run: a manager and a data server, each xrootd + cmsd from the entrypoint ---------------------


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((ADDRESS, port)) == 0


@contextlib.contextmanager
def entrypoint_site() -> Iterator[tuple[Path, CertificateAuthority, dict[str, Path]]]:
    """A manager and one data server, each `--exec --program xrootd` and `--program cmsd`
    (the entrypoint runs as root; a shim on PATH adds xrootd's -R to drop to SERVER_USER)."""
    if os.geteuid() != 0:
        pytest.fail("starts xrootd as the lab's account: run as root")
    for port in (MANAGER_PORT, MANAGER_CMS, SERVER_PORT):
        if _listening(port):
            pytest.fail(f"port {port} is taken")
    base = Path(tempfile.mkdtemp(prefix="tpcbench-entrypoint-site-", dir="/dev/shm"))
    base.chmod(0o755)
    user = pwd.getpwnam(SERVER_USER)
    shims = base / "bin"
    shims.mkdir()
    for program in ("xrootd", "cmsd"):
        shim = shims / program
        real = shutil.which(program)
        shim.write_text(f'#!/bin/sh\nexec {real} "$@" -R {SERVER_USER}\n')
        shim.chmod(0o755)
    ca = CertificateAuthority.init(base / "ca")
    client = ca.issue_client("orchestrator")
    secret = new_macaroon_secret()
    processes: list[subprocess.Popen[bytes]] = []
    nodes: dict[str, Path] = {}
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}
    # cmsd writes /tmp/cmsd.NAME.env (in a pod its own /tmp): names no other run has used
    tag = base.name.rsplit("-", 1)[-1]
    try:
        for name, port, role in (("rdr", MANAGER_PORT, "manager"), ("ds1", SERVER_PORT, "server")):
            home = base / name
            (home / "data").mkdir(parents=True)
            (home / "run").mkdir()
            host = ca.issue_host(name, ips=[ADDRESS], dns=["localhost"])
            gridmap = home / "gridmap"
            gridmap.write_text(
                render_xrootd_gridmap([client.subject_dn], dn_prefix(host.subject_dn))
            )
            (home / "macaroon").write_text(secret)
            for path in (home, home / "data", home / "run", host.cert, host.key, home / "macaroon"):
                os.chown(path, user.pw_uid, user.pw_gid)
            (home / "macaroon").chmod(0o600)
            cluster = ["--cluster-role", role, "--manager", f"{ADDRESS}:{MANAGER_CMS}"]
            common = [
                "xrootd", "--exec", "--name", f"{name}-{tag}", "--data-root", str(home / "data"),
                "--run-dir", str(home / "run"), "--host-cert", str(host.cert),
                "--host-key", str(host.key), "--certdir", str(ca.certdir),
                "--gridmap", str(gridmap), "--macaroon-secret", str(home / "macaroon"),
                "--root-port", str(port), "--https-port", str(port), *cluster,
            ]  # fmt: skip
            for program in ("xrootd", "cmsd"):
                argv = [*common, "--program", program, "--log", str(home / f"{program}.log")]
                process = subprocess.Popen(
                    [sys.executable, "-m", "orchestrator.servers", *argv],
                    env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
                processes.append(process)
            nodes[name] = home
        deadline = time.monotonic() + 30
        while not all(_listening(p) for p in (MANAGER_PORT, MANAGER_CMS, SERVER_PORT)):
            assert time.monotonic() < deadline, "the site's ports never listened"
            assert all(p.poll() is None for p in processes), "a program of the site exited"
            time.sleep(0.2)
        nodes["client-cert"], nodes["client-key"] = client.cert, client.key
        yield base, ca, nodes
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)
        for env_file in Path("/tmp").glob(f"cmsd.*-{tag}.env"):
            env_file.unlink()


def test_a_get_through_the_entrypoints_manager_is_redirected_to_its_data_server() -> None:
    payload = os.urandom(256 * 1024)
    with entrypoint_site() as (_, ca, nodes):
        source = nodes["ds1"] / "data" / "tpcbench-source-x"
        source.write_bytes(payload)
        user = pwd.getpwnam(SERVER_USER)
        os.chown(source, user.pw_uid, user.pw_gid)
        curl = [
            "curl", "-sS", "--cert", str(nodes["client-cert"]), "--key", str(nodes["client-key"]),
            "--capath", str(ca.certdir), "--max-time", "20",
        ]  # fmt: skip
        url = f"https://{ADDRESS}:{MANAGER_PORT}/tpcbench-source-x"
        # the manager waits cms.delay startup (2 s) for its servers before it redirects
        deadline = time.monotonic() + 30
        while True:
            head = subprocess.run(
                [*curl, "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", url],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if head.stdout.startswith("302") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert head.stdout == f"302 https://{ADDRESS}:{SERVER_PORT}/tpcbench-source-x", head
        got = subprocess.run([*curl, "-L", url], capture_output=True, check=False)
        assert got.returncode == 0, got.stderr
        assert got.stdout == payload

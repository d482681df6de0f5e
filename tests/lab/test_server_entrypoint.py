"""`python -m orchestrator.servers`: the container entrypoint renders the same configuration."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from ca.authority import CertificateAuthority
from orchestrator.servers import XrootdSettings, render_xrootd_config


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.servers", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_xrootd_config_from_the_command_line_is_the_library_config() -> None:
    result = run_module(
        "xrootd", "--name", "n1", "--data-root", "/data", "--run-dir", "/run/x",
        "--host-cert", "/pki/c.pem", "--host-key", "/pki/k.pem", "--certdir", "/pki/ca",
        "--https-port", "9443",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    expected = XrootdSettings(
        name="n1",
        data_root=Path("/data"),
        run_dir=Path("/run/x"),
        host_cert=Path("/pki/c.pem"),
        host_key=Path("/pki/k.pem"),
        certdir=Path("/pki/ca"),
        https_port=9443,
    )
    assert result.stdout == render_xrootd_config(expected)


def test_gridftp_bad_port_range_is_one_line() -> None:
    result = run_module(
        "gridftp", "--data-interface", "10.0.0.1", "--host-cert", "c", "--host-key", "k",
        "--certdir", "d", "--grid-mapfile", "g", "--log", "l", "--home-dir", "h",
        "--data-ports", "20999,20000",
    )  # fmt: skip
    assert result.returncode == 2
    assert "is not a port range like 20000,20999" in result.stderr


def test_gridftp_exec_runs_a_real_server_with_gsi(tmp_path: Path) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca")
    host = ca.issue_host("localhost", ips=["127.0.0.1"])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "grid-mapfile").write_text("")
    server = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.servers", "gridftp", "--exec",
         "--data-interface", "127.0.0.1", "--port", str(port),
         "--host-cert", str(host.cert), "--host-key", str(host.key),
         "--certdir", str(ca.certdir), "--grid-mapfile", str(tmp_path / "grid-mapfile"),
         "--log", str(tmp_path / "gridftp.log"), "--home-dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        banner = ""
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                    banner = conn.recv(256).decode()
                break
            except OSError:
                time.sleep(0.1)
        assert banner.startswith("220"), banner
        # exec replaced the python process: the pid serving is the gridftp server itself
        assert Path(f"/proc/{server.pid}/exe").resolve().name == "globus-gridftp-server"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_check_fails_once_the_certificate_is_newer_than_the_server(tmp_path: Path) -> None:
    cert = tmp_path / "hostcert.pem"
    cert.write_text("old")
    time.sleep(1.1)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        server = subprocess.Popen(["sleep", "60"])  # plays the server, started after the cert
        try:
            check = ["check", "--port", port, "--credentials", str(cert), "--started-pid"]
            assert run_module(*check, str(server.pid)).returncode == 0
            time.sleep(2.1)
            cert.write_text("renewed")  # the renewal sidecar replaced it
            result = run_module(*check, str(server.pid))
            assert result.returncode == 1 and "renewed after the server started" in result.stderr
        finally:
            server.kill()
            server.wait()
    assert run_module("check", "--port", port).returncode == 1  # nothing listens any more

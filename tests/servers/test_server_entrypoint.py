"""`python -m orchestrator.servers`: the container entrypoint renders the same configuration."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.servers import XrootdSettings, layout, render_xrootd_config


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
        gridmap=layout.XROOTD_GRIDMAP,
        macaroon_secret=layout.MACAROON_SECRET,
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


# -- the liveness check: a renewed certificate restarts a server only between measurements --


@dataclass
class Renewal:
    """A process playing the server, its certificate, its data area, the check's state file."""

    server: subprocess.Popen[bytes]
    cert: Path
    data: Path
    state: Path

    def loaded(self) -> None:
        """The certificate is the one the server read at its start."""
        os.utime(self.cert, (time.time() - 3600, time.time() - 3600))

    def renewed(self, ago: float = 0.0) -> None:
        when = time.time() - ago  # after the server's start: the fixture waited
        os.utime(self.cert, (when, when))

    def check(self, port: int, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
        return run_module(
            "check", "--port", str(port), "--credentials", str(self.cert),
            "--state", str(self.state), "--data-root", str(self.data),
            "--started-pid", str(self.server.pid), *extra,
        )  # fmt: skip


@pytest.fixture(scope="module")
def renewal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Renewal]:
    where = tmp_path_factory.mktemp("renewal")
    cert = where / "hostcert.pem"
    cert.write_text("certificate")
    (where / "data").mkdir()
    server = subprocess.Popen(["sleep", "600"])
    time.sleep(3.1)  # /proc's start time has whole seconds: a renewal is later than that
    yield Renewal(server, cert, where / "data", where / "last-busy")
    server.kill()
    server.wait()


@pytest.fixture
def fresh(renewal: Renewal) -> Renewal:
    renewal.state.unlink(missing_ok=True)
    for name in renewal.data.iterdir():
        name.unlink()
    os.utime(renewal.data, (0, 0))  # no transfer since long before the server started
    return renewal


@contextmanager
def listening(family: socket.AddressFamily = socket.AF_INET) -> Iterator[socket.socket]:
    with socket.socket(family) as listener:
        listener.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        listener.listen()
        yield listener


@contextmanager
def connected(listener: socket.socket) -> Iterator[None]:
    """A real established connection to `listener`, both ends open (a transfer under way)."""
    with socket.create_connection(listener.getsockname()[:2]):
        accepted, _ = listener.accept()
        with accepted:
            yield


def port_of(listener: socket.socket) -> int:
    return int(listener.getsockname()[1])


RESTART = "was renewed after the server started"


def test_a_certificate_the_server_loaded_keeps_it_running(fresh: Renewal) -> None:
    fresh.loaded()
    with listening() as server:
        result = fresh.check(port_of(server), extra=("--quiet-period", "0"))
    assert result.returncode == 0, result.stderr


def test_a_renewed_certificate_restarts_an_idle_server(fresh: Renewal) -> None:
    fresh.renewed()
    with listening() as server:
        result = fresh.check(port_of(server), extra=("--quiet-period", "0"))
    assert result.returncode == 1 and RESTART in result.stderr
    assert "no transfer for" in result.stderr


@pytest.mark.parametrize("family", [socket.AF_INET, socket.AF_INET6], ids=["ipv4", "ipv6"])
def test_a_renewed_certificate_waits_while_a_transfer_is_under_way(
    fresh: Renewal, family: socket.AddressFamily
) -> None:
    fresh.renewed()
    with listening(family) as server:
        host = ("--host", server.getsockname()[0])
        with connected(server):
            assert (
                fresh.check(port_of(server), extra=("--quiet-period", "0", *host)).returncode == 0
            )
        # closed: idle now, but it was busy a moment ago, so it waits for the quiet period
        assert fresh.check(port_of(server), extra=("--quiet-period", "600", *host)).returncode == 0
        result = fresh.check(port_of(server), extra=("--quiet-period", "0", *host))
    assert result.returncode == 1 and RESTART in result.stderr


def test_a_transfer_between_two_checks_holds_the_renewal_too(fresh: Renewal) -> None:
    """A measurement can begin and end between two checks; its destination names, written and
    deleted in the data area, still show the server was not idle."""
    fresh.renewed()
    time.sleep(1.1)
    quiet = ("--quiet-period", "1")
    with listening() as server:
        (fresh.data / "tpcbench-destination-0").write_text("a copy")  # no check saw it
        assert fresh.check(port_of(server), extra=quiet).returncode == 0
        time.sleep(1.1)
        result = fresh.check(port_of(server), extra=quiet)
    found = re.search(r"renewed (\d+) s ago, and no transfer for (\d+) s", result.stderr)
    assert result.returncode == 1 and found, result.stderr
    renewed, idle = map(int, found.groups())
    assert idle < renewed  # idle since the name was written, not since the renewal


def test_a_connection_on_the_data_ports_keeps_the_server_busy(fresh: Renewal) -> None:
    fresh.renewed()
    with listening() as control, listening() as data:
        data_port = port_of(data)
        ranges = ("--quiet-period", "0", "--data-ports", f"{data_port},{data_port}")
        with connected(data):
            assert fresh.check(port_of(control), extra=ranges).returncode == 0
            # without the data range that connection is not the server's
            assert fresh.check(port_of(control), extra=ranges[:2]).returncode == 1


def test_a_connection_to_another_port_does_not_hold_the_renewal(fresh: Renewal) -> None:
    fresh.renewed()
    with listening() as server, listening() as elsewhere, connected(elsewhere):
        result = fresh.check(port_of(server), extra=("--quiet-period", "0"))
    assert result.returncode == 1 and RESTART in result.stderr


def test_a_recently_renewed_certificate_waits_for_the_quiet_period(fresh: Renewal) -> None:
    fresh.renewed()
    with listening() as server:
        assert fresh.check(port_of(server), extra=("--quiet-period", "600")).returncode == 0


def test_the_longest_wait_restarts_even_a_busy_server(fresh: Renewal) -> None:
    fresh.renewed(ago=1)
    with listening() as server, connected(server):
        result = fresh.check(port_of(server), extra=("--max-wait", "1"))
    assert result.returncode == 1 and "the longest a renewal waits" in result.stderr


def test_a_dead_server_fails_the_check_whatever_its_certificate(fresh: Renewal) -> None:
    fresh.loaded()
    with listening() as server:
        port = port_of(server)
    result = fresh.check(port)
    assert result.returncode == 1 and f"127.0.0.1:{port}" in result.stderr

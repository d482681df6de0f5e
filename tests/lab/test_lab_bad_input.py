"""`lab up` with bad input or a busy machine: one line that says what to do, nothing left behind."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.errors import UserError
from orchestrator.lab import LabNetwork, start_lab, stop_lab
from orchestrator.lab.network import existing_namespaces
from orchestrator.lab.preflight import PROGRAMS, check_packages
from tests.support.running_lab import RunningLab, make_home

pytestmark = pytest.mark.lab
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")


@pytest.fixture
def home_with_ca() -> Iterator[Path]:
    home = make_home()
    CertificateAuthority.init(home / "ca")
    yield home
    stop_lab(home)
    shutil.rmtree(home, ignore_errors=True)


def test_absent_ca_says_how_to_create_one() -> None:
    home = make_home()
    try:
        with pytest.raises(UserError) as caught:
            start_lab(home, 1, 1 << 20, network=LabNetwork(prefix="tpcbx", subnet_offset=245))
        message = str(caught.value)
        assert "tpcbench ca init --dir" in message and "\n" not in message
        assert not (home / "lab" / "run.json").exists()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_cli_prints_one_line_error_for_an_absent_ca() -> None:
    home = make_home()
    try:
        env = {**os.environ, "TPCBENCH_HOME": str(home), "TPCBENCH_LAB_PREFIX": "tpcbx"}
        result = subprocess.run(
            [sys.executable, "-m", "orchestrator", "lab", "up", "--nodes", "1"],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tpcbench: error: no CA in")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_missing_programs_name_the_packages(
    home_with_ca: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", tempfile.mkdtemp())  # nothing to be found there
    with pytest.raises(UserError) as caught:
        start_lab(home_with_ca, 1, 1 << 20, network=LabNetwork(prefix="tpcbx", subnet_offset=245))
    message = str(caught.value)
    assert "make system-deps" in message
    assert "xrootd-server" in message and "globus-gridftp-server-progs" in message
    assert not (home_with_ca / "lab" / "run.json").exists()


def test_missing_xrdhttp_plugins_name_their_package(tmp_path: Path) -> None:
    with pytest.raises(UserError) as caught:
        check_packages(PROGRAMS, library_dirs=[str(tmp_path)])
    assert "libXrdHttpTPC-5.so" in str(caught.value)
    assert "apt-get install xrootd-server-plugins" in str(caught.value)
    assert "libXrdAccSciTokens-5.so" in str(caught.value)  # the lab's servers accept tokens
    assert "xrootd-scitokens-plugins" in str(caught.value)


def test_a_second_lab_in_the_same_home_is_refused(running_lab: RunningLab) -> None:
    with pytest.raises(UserError, match=r"already running .* tpcbench lab down"):
        start_lab(running_lab.home, 1, 1 << 20)


def test_taken_loopback_port_is_named(home_with_ca: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        # node 1's https port is base + 1
        network = LabNetwork(prefix="tpcbx", subnet_offset=245, base_port=port - 1)
        with pytest.raises(UserError) as caught:
            start_lab(home_with_ca, 1, 1 << 20, mode="loopback", network=network)
    assert f"port {port} (lab-1 https) is already in use" in str(caught.value)
    assert not (home_with_ca / "lab" / "run.json").exists()


@pytest.fixture
def squatted_namespace() -> Iterator[str]:
    """Someone else's namespace with our name, something listening on 8443 inside."""
    name = "tpcbx-lab-1"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
    listener = subprocess.Popen(
        ["ip", "netns", "exec", name, sys.executable, "-c",
         "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', 8443)); s.listen();"
         " print('up', flush=True); time.sleep(300)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert listener.stdout is not None and listener.stdout.readline().strip() == "up"
    yield name
    listener.kill()
    listener.wait()
    subprocess.run(["ip", "netns", "del", name], check=True)


@needs_root
def test_taken_port_inside_a_namespace_is_named(
    home_with_ca: Path, squatted_namespace: str
) -> None:
    with pytest.raises(UserError) as caught:
        start_lab(home_with_ca, 2, 1 << 20, network=LabNetwork(prefix="tpcbx", subnet_offset=245))
    message = str(caught.value)
    assert f"port 8443 in network namespace {squatted_namespace} is already taken" in message
    assert f"ip netns del {squatted_namespace}" in message
    assert "tpcbx-router" not in existing_namespaces()  # nothing was built


@needs_root
def test_left_over_namespace_is_named(home_with_ca: Path) -> None:
    subprocess.run(["ip", "netns", "add", "tpcbx-router"], check=True)
    try:
        with pytest.raises(UserError, match=r"tpcbx-router already exists.*ip netns del"):
            start_lab(
                home_with_ca, 1, 1 << 20, network=LabNetwork(prefix="tpcbx", subnet_offset=245)
            )
    finally:
        subprocess.run(["ip", "netns", "del", "tpcbx-router"], check=True)


@needs_root  # only root drops to the server user
def test_unreachable_home_is_named() -> None:
    outer = Path(tempfile.mkdtemp())  # 0700: the server user cannot pass
    try:
        home = outer / "home"
        CertificateAuthority.init(home / "ca")
        with pytest.raises(UserError, match="not reachable by the server user"):
            start_lab(home, 1, 1 << 20, network=LabNetwork(prefix="tpcbx", subnet_offset=245))
    finally:
        stop_lab(outer / "home")
        shutil.rmtree(outer, ignore_errors=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"file_size": 0}, "--file-size must be a positive"),
        ({"rate_gbit": -1.0}, "--link-capacity must be a positive rate"),
        ({"rate_gbit": 1.0, "mode": "loopback"}, "--link-capacity needs netns mode"),
        ({"rtt": "uniform:30ms", "mode": "loopback"}, "--rtt and TCP settings need netns mode"),
        ({"rtt": "uniform:fast"}, "'fast' is not a duration"),
        ({"mode": "bridge"}, "unknown lab mode"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(
    home_with_ca: Path, kwargs: dict, message: str
) -> None:
    options = {"file_size": 1 << 20, **kwargs}
    with pytest.raises(UserError, match=message):
        start_lab(home_with_ca, 1, network=LabNetwork(prefix="tpcbx", subnet_offset=245), **options)
    assert not (home_with_ca / "lab" / "run.json").exists()


def test_an_unbuilt_delay_program_is_named_before_anything_starts(
    home_with_ca: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TPCBENCH_DELAYLINE", str(home_with_ca / "no-such-delayline"))
    network = LabNetwork(prefix="tpcwx", subnet_offset=135)
    with pytest.raises(UserError, match=r"is not built; build it with: make delayline"):
        start_lab(home_with_ca, 2, 1 << 20, network=network, rtt="uniform:10ms")
    assert not (home_with_ca / "lab" / "run.json").exists()
    assert not {n for n in existing_namespaces() if n.startswith("tpcwx-")}

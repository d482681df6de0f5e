"""Two real storage nodes on loopback for the transfer tests: XRootD and GridFTP each.

Built from the same configuration code as the lab (orchestrator.servers) and our CA, on
127.0.0.1 with ports in 19000-19999. Every server runs in its own process
group so a test can kill, stop (SIGSTOP) or restart one node's servers. The fixtures
`two_nodes` (one pair per session) and `fresh_destination` (restarted after the test) are
every test folder's (tests/conftest.py); `measure` takes a measurement between them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, Endpoint, source_name
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import run_measurement
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.servers import (
    GridftpSettings,
    XrootdSettings,
    gridftp_command,
    gridftp_environment,
    render_grid_mapfile,
    render_xrootd_config,
    xrootd_command,
    xrootd_environment,
    xrootd_files,
)
from orchestrator.servers.access import dn_prefix, new_macaroon_secret, render_xrootd_gridmap
from tests.support.processes import processes_mentioning

SMALL = 8 << 20  # the K = 3 correctness transfers
BIG = 512 << 20  # long enough that "mid-transfer" is a real moment on this machine
SERVICE_USER = "nobody"  # xrootd refuses to run as root; gridftp maps our client DN to it


@dataclass(frozen=True)
class NodePlan:
    name: str
    address: str
    https: int
    root: int
    gridftp: int
    data_ports: tuple[int, int]


# One address for both: root:// TPC checks that the pulling server connects from the host the
# client named, and on loopback every connection comes from 127.0.0.1.
PLANS = (
    NodePlan("node-a", "127.0.0.1", 19443, 19094, 19811, (19500, 19549)),
    NodePlan("node-b", "127.0.0.1", 19444, 19095, 19812, (19550, 19599)),
)


@dataclass
class Node:
    plan: NodePlan
    home: Path
    endpoint: Endpoint
    xrootd_argv: list[str]
    xrootd_env: dict[str, str]
    gridftp_argv: list[str]
    gridftp_env: dict[str, str]
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def data_root(self) -> Path:
        return Path(self.endpoint.data_root)

    def start(self, which: str = "both") -> None:
        for service in ("xrootd", "gridftp") if which == "both" else (which,):
            argv, env = (
                (self.xrootd_argv, self.xrootd_env)
                if service == "xrootd"
                else (self.gridftp_argv, self.gridftp_env)
            )
            log = open(self.home / f"{service}.out", "ab")  # noqa: SIM115 (child keeps it)
            self.processes[service] = subprocess.Popen(
                argv,
                env={**os.environ, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            log.close()
        for port in self.ports(which):
            _wait_for_port(self.plan.address, port)

    def signal(self, service: str, signum: int) -> None:
        """Signal a server's whole process group (gridftp forks one child per session)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.processes[service].pid, signum)

    def stop(self, which: str = "both") -> None:
        for service in ("xrootd", "gridftp") if which == "both" else (which,):
            process = self.processes.pop(service, None)
            if process is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGCONT)  # a stopped group cannot die of TERM
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        # XRootD runs its TPC helper in a session of its own; a killed server orphans it.
        for pid in processes_mentioning(str(self.home)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def ports(self, which: str) -> list[int]:
        ports = {"xrootd": [self.plan.https, self.plan.root], "gridftp": [self.plan.gridftp]}
        return ports["xrootd"] + ports["gridftp"] if which == "both" else ports[which]


@dataclass
class TwoNodes:
    base: Path
    nodes: list[Node]
    creds: ClientCredentials
    ca: CertificateAuthority

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def server_groups(self) -> set[int]:
        """Process group ids of every running server (their forks share them)."""
        return {p.pid for node in self.nodes for p in node.processes.values()}


def start_two_nodes(source_sizes: list[int]) -> TwoNodes:
    """Create a CA, two nodes with their servers running, and random source files on the first."""
    base = Path(tempfile.mkdtemp(prefix="tpcbench-transfers-", dir="/dev/shm"))
    base.chmod(0o755)  # the service user must reach the data roots
    user = pwd.getpwnam(SERVICE_USER)
    ca = CertificateAuthority.init(base / "ca")
    client = ca.issue_client("tpcbench-tests")
    creds = ClientCredentials(cert=client.cert, key=client.key, certdir=ca.certdir)
    macaroon_secret = new_macaroon_secret()
    nodes = []
    for plan in PLANS:
        home = base / plan.name
        data = home / "data"
        data.mkdir(parents=True)
        host = ca.issue_host(plan.name, ips=[plan.address])
        for path in (home, data, host.cert.parent, host.cert, host.key):
            os.chown(path, user.pw_uid, user.pw_gid)
        if not nodes:  # transfers go from the first node to the second
            for size in source_sizes:
                write_random_file(data / source_name(size).lstrip("/"), size, user)
        xrootd = XrootdSettings(
            name=plan.name,
            data_root=data,
            run_dir=home / "xrootd",
            host_cert=host.cert,
            host_key=host.key,
            certdir=ca.certdir,
            gridmap=home / "xrootd-gridmap",
            macaroon_secret=home / "macaroon-secret",
            root_port=plan.root,
            https_port=plan.https,
            xrdcp_path=shutil.which("xrdcp") or "/usr/bin/xrdcp",
        )
        xrootd.run_dir.mkdir()
        os.chown(xrootd.run_dir, user.pw_uid, user.pw_gid)
        xrootd.gridmap.write_text(
            render_xrootd_gridmap([client.subject_dn], dn_prefix(host.subject_dn))
        )
        xrootd.macaroon_secret.write_text(macaroon_secret)
        os.chown(xrootd.macaroon_secret, user.pw_uid, user.pw_gid)
        xrootd.macaroon_secret.chmod(0o600)
        for path, text in xrootd_files(xrootd).items():
            path.write_text(text)
        config = home / "xrootd.cfg"
        config.write_text(render_xrootd_config(xrootd))
        # xrootd binds every address; -R drops root as it insists.
        xrootd_argv = [*xrootd_command(config, home / "xrootd.log", plan.name), "-R", SERVICE_USER]
        # GSI insists the host key belongs to the server's user: root for gridftp.
        gridftp_cert, gridftp_key = home / "gridftp-hostcert.pem", home / "gridftp-hostkey.pem"
        shutil.copyfile(host.cert, gridftp_cert)
        shutil.copyfile(host.key, gridftp_key)
        gridftp_key.chmod(0o600)
        gridmap = home / "grid-mapfile"
        gridmap.write_text(render_grid_mapfile({client.subject_dn: SERVICE_USER}))
        gridftp = GridftpSettings(
            data_interface=plan.address,
            host_cert=gridftp_cert,
            host_key=gridftp_key,
            certdir=ca.certdir,
            grid_mapfile=gridmap,
            log_path=home / "gridftp.log",
            home_dir=data,
            port=plan.gridftp,
            data_port_range=plan.data_ports,
        )
        endpoint = Endpoint(
            name=plan.name,
            address=plan.address,
            ports={"https": plan.https, "root": plan.root, "gridftp": plan.gridftp},
            data_root=str(data),
            host_dn=host.subject_dn,
        )
        node = Node(
            plan=plan,
            home=home,
            endpoint=endpoint,
            xrootd_argv=xrootd_argv,
            xrootd_env=xrootd_environment(xrootd),
            gridftp_argv=gridftp_command(gridftp),
            gridftp_env=gridftp_environment(gridftp),
        )
        nodes.append(node)
    two = TwoNodes(base=base, nodes=nodes, creds=creds, ca=ca)
    for node in nodes:  # else the readiness wait would be fooled by a stranger's server
        for port in node.ports("both"):
            if _listening(node.plan.address, port):
                raise RuntimeError(f"port {port} is taken; stop whatever listens there")
    try:
        for node in nodes:
            node.start()
    except BaseException:
        two.stop()
        raise
    return two


def write_random_file(path: Path, size: int, user: pwd.struct_passwd) -> None:
    """Random bytes, so a checksum at the destination proves the data really moved."""
    with open(path, "wb") as out:
        remaining = size
        while remaining:
            chunk = min(remaining, 4 << 20)
            out.write(os.urandom(chunk))
            remaining -= chunk
    os.chown(path, user.pw_uid, user.pw_gid)


def _listening(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0):
            return True
    except OSError:
        return False


def _wait_for_port(address: str, port: int, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"nothing listens on {address}:{port} after {deadline_s} s"
                ) from exc
            time.sleep(0.1)


@pytest.fixture(scope="session")
def two_nodes() -> Iterator[TwoNodes]:
    nodes = start_two_nodes([SMALL, BIG])
    try:
        yield nodes
    finally:
        nodes.stop()
        shutil.rmtree(nodes.base, ignore_errors=True)


@pytest.fixture
def fresh_destination(two_nodes: TwoNodes) -> Iterator[TwoNodes]:
    """For tests that kill or stop the destination's servers: restart them afterwards."""
    yield two_nodes
    destination = two_nodes.nodes[1]
    destination.stop()
    for leftover in destination.data_root.iterdir():
        leftover.unlink()
    destination.start()


def measure(
    two: TwoNodes,
    protocol: str,
    streams: int,
    *,
    file_size: int,
    client: str = "native",
    source_path: str | None = None,
    **options: Any,
) -> MeasurementRecord:
    """K = 3 copies from the first node to the second; `options` go to run_measurement."""
    src, dst = (n.endpoint for n in two.nodes)
    request = MeasurementRequest.between(
        src, dst, protocol, streams, client=client, transfers=3, file_size=file_size,
        source_path=source_path,
    )  # fmt: skip
    options.setdefault("creds", two.creds)
    options.setdefault("timeout", 60)  # a hung transfer fails the test instead of hanging it
    return asyncio.run(run_measurement(request, **options))

"""Real XRootD clusters on loopback for the redirector tests: a source server, a meta-manager,
two site managers under it and their data servers, each node's xrootd (and cmsd) from
orchestrator.servers' one configuration, secured as the lab's (our CA, grid map, authdb,
macaroons with one shared secret), run as the lab's unprivileged account.

Ports 19600-19699 on 127.0.0.1 (tests/support/two_nodes.py, which a test session keeps
running, has up to 19599); every node's programs in a process group of their own.
"""

from __future__ import annotations

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

from ca.authority import CertificateAuthority
from orchestrator.endpoints import ClientCredentials, source_name
from orchestrator.servers import (
    ClusterPlace,
    XrootdSettings,
    cmsd_command,
    render_xrootd_config,
    xrootd_command,
    xrootd_environment,
    xrootd_files,
)
from orchestrator.servers.access import dn_prefix, new_macaroon_secret, render_xrootd_gridmap
from tests.support.processes import processes_mentioning

SERVER_USER = "tpcbench"  # the lab's unprivileged account (orchestrator/lab/preflight.py)
ADDRESS = "127.0.0.1"


@dataclass(frozen=True)
class NodePlan:
    name: str
    port: int  # xroot and HTTPS
    place: ClusterPlace


def _site(meta_cms: int, root: int, cms: int, servers: int) -> list[NodePlan]:
    manager = ClusterPlace(
        role="manager", address=ADDRESS, cms_port=cms, upstream=f"{ADDRESS}:{meta_cms}"
    )
    plans = [NodePlan(f"rdr{root}", root, manager)]
    for i in range(1, servers + 1):
        place = ClusterPlace(role="server", upstream=f"{ADDRESS}:{cms}")
        plans.append(NodePlan(f"ds{root + i}", root + i, place))
    return plans


META = NodePlan("meta", 19610, ClusterPlace(role="meta-manager", address=ADDRESS, cms_port=19611))
SOURCE = NodePlan("source", 19600, ClusterPlace())
SITE_A = _site(19611, 19620, 19629, 2)  # manager 19620 (cmsd 19629), data servers 19621-2
SITE_B = _site(19611, 19630, 19639, 1)  # manager 19630 (cmsd 19639), data server 19631
PLANS = (SOURCE, META, *SITE_A, *SITE_B)


@dataclass
class Node:
    plan: NodePlan
    settings: XrootdSettings
    config: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"https://{ADDRESS}:{self.plan.port}"

    @property
    def root_url(self) -> str:
        return f"root://{ADDRESS}:{self.plan.port}"

    @property
    def data_root(self) -> Path:
        return self.settings.data_root

    def log(self, program: str = "xrootd") -> str:
        path = self.settings.run_dir.parent / "logs" / self.plan.name / f"{program}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def start(self) -> None:
        logs = self.settings.run_dir.parent / "logs"
        commands = [xrootd_command(self.config, logs / "xrootd.log", self.plan.name)]
        if self.plan.place.clustered:
            commands.append(cmsd_command(self.config, logs / "cmsd.log", self.plan.name))
        env = {**os.environ, **xrootd_environment(self.settings)}
        for argv in commands:
            self.processes.append(
                subprocess.Popen(
                    [*argv, "-R", SERVER_USER],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        self.processes.clear()


@dataclass
class Cluster:
    base: Path
    ca: CertificateAuthority
    creds: ClientCredentials
    nodes: dict[str, Node]

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()
        for pid in processes_mentioning(str(self.base)):  # TPC helpers in sessions of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def running_cluster(source_size: int) -> Iterator[Cluster]:
    """A started cluster whose source server holds a random file of `source_size` bytes
    (`source_name(source_size)`); stopped and removed afterwards. Needs root."""
    if os.geteuid() != 0:
        raise RuntimeError("the redirector tests start servers as the lab's account: run as root")
    cluster = start_cluster()
    try:
        write_file(cluster[SOURCE.name], source_name(source_size), os.urandom(source_size))
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.base, ignore_errors=True)


def start_cluster(client_name: str = "orchestrator") -> Cluster:
    """Every node of PLANS configured and started; waits for each xroot port to listen."""
    for plan in PLANS:
        if _listening(plan.port):
            raise RuntimeError(f"port {plan.port} is taken: another redirector test running?")
    base = Path(tempfile.mkdtemp(prefix="tpcbench-redirector-", dir="/dev/shm"))
    base.chmod(0o755)
    user = pwd.getpwnam(SERVER_USER)
    ca = CertificateAuthority.init(base / "ca")
    client = ca.issue_client(client_name)
    creds = ClientCredentials(cert=client.cert, key=client.key, certdir=ca.certdir)
    secret = new_macaroon_secret()  # one per lab: any server of it accepts another's
    nodes = {}
    try:
        for plan in PLANS:
            nodes[plan.name] = _configure(base, ca, plan, client.subject_dn, secret, user)
        cluster = Cluster(base, ca, creds, nodes)
        for node in nodes.values():
            node.start()
        for node in nodes.values():
            _wait_for_port(node.settings.root_port)
            _wait_for_port(node.settings.https_port)
    except BaseException:
        for node in nodes.values():
            node.stop()
        shutil.rmtree(base, ignore_errors=True)  # nothing of a cluster that never came up stays
        raise
    return cluster


def _configure(
    base: Path,
    ca: CertificateAuthority,
    plan: NodePlan,
    client_dn: str,
    secret: str,
    user: pwd.struct_passwd,
) -> Node:
    home = base / plan.name
    data = home / "data"
    data.mkdir(parents=True)
    (home / "logs").mkdir()
    host = ca.issue_host(plan.name, ips=[ADDRESS], dns=["localhost", socket.gethostname()])
    settings = XrootdSettings(
        name=plan.name,
        data_root=data,
        run_dir=home / "run",
        host_cert=host.cert,
        host_key=host.key,
        certdir=ca.certdir,
        gridmap=home / "xrootd-gridmap",
        macaroon_secret=home / "macaroon-secret",
        root_port=plan.port,
        https_port=plan.port if plan.place.clustered else plan.port + 50,
        xrdcp_path=shutil.which("xrdcp") or "/usr/bin/xrdcp",
        cluster=plan.place,
    )
    settings.run_dir.mkdir()
    settings.gridmap.write_text(render_xrootd_gridmap([client_dn], dn_prefix(host.subject_dn)))
    settings.macaroon_secret.write_text(secret)
    settings.macaroon_secret.chmod(0o600)
    for path, text in xrootd_files(settings).items():
        path.write_text(text)
    config = home / "xrootd.cfg"
    config.write_text(render_xrootd_config(settings))
    for path in (home, data, home / "logs", settings.run_dir, host.cert.parent, host.cert):
        os.chown(path, user.pw_uid, user.pw_gid)
    for path in (host.key, settings.macaroon_secret):
        os.chown(path, user.pw_uid, user.pw_gid)
    return Node(plan, settings, config)


def write_file(node: Node, name: str, data: bytes) -> None:
    """A file on one node's data root, owned by the servers' account."""
    user = pwd.getpwnam(SERVER_USER)
    path = node.data_root / name.lstrip("/")
    path.write_bytes(data)
    os.chown(path, user.pw_uid, user.pw_gid)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((ADDRESS, port)) == 0


def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not _listening(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on {ADDRESS}:{port} after {timeout:.0f} s")
        time.sleep(0.1)

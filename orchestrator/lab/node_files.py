"""A lab node's files and readiness: its folder (config, logs, its copy of the host key), its
data directory, both owned by the server account, and the wait until its servers serve."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.health import tcp_open
from orchestrator.lab.preflight import ServerAccount
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.runtime import Runtime

READY_TIMEOUT = 30.0
# Under a node's folder: who may log in and as whom (servers/access.py), and the key of the
# macaroons its XRootD issues.
GRID_MAPFILE = "grid-mapfile"  # GridFTP: orchestrator DN -> the server account
XROOTD_GRIDMAP = "xrootd-gridmap"  # XRootD: DN -> identity
MACAROON_SECRET = "pki/macaroon-secret"


def own(path: Path, account: ServerAccount, mode: int) -> None:
    if os.geteuid() == 0:
        os.chown(path, account.uid, account.gid)
    os.chmod(path, mode)


def copy_certdir(source: Path, target: Path) -> Path:
    """A world-readable copy of the CA's grid-security directory for the servers."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    os.chmod(target, 0o755)
    for item in source.iterdir():
        if item.is_file() and not item.name.startswith("."):
            shutil.copyfile(item, target / item.name)
            os.chmod(target / item.name, 0o644)
    return target


def prepare_node_dir(
    node_dir: Path, data_root: Path, account: ServerAccount, cert: Path, key: Path
) -> None:
    for folder in (node_dir, node_dir / "pki", node_dir / "run"):
        folder.mkdir(parents=True, exist_ok=True)
        own(folder, account, 0o755)
    shutil.rmtree(data_root, ignore_errors=True)
    data_root.mkdir(parents=True)
    os.chmod(data_root.parent, 0o755)  # the servers must pass through it
    own(data_root, account, 0o755)
    # servers run unprivileged, so each node reads its own copy of the host key
    shutil.copyfile(cert, node_dir / "pki" / "hostcert.pem")
    shutil.copyfile(key, node_dir / "pki" / "hostkey.pem")
    own(node_dir / "pki" / "hostcert.pem", account, 0o644)
    own(node_dir / "pki" / "hostkey.pem", account, 0o600)


@dataclass(frozen=True)
class AccessFiles:
    """The same on every server of a lab: the two grid maps and the macaroon key."""

    grid_mapfile: str
    xrootd_gridmap: str
    macaroon_secret: str

    @classmethod
    def read(cls, node_dir: Path) -> AccessFiles:
        """Those of a prepared node (more servers on that node share them)."""
        return cls(
            *(
                (node_dir / name).read_text()
                for name in (GRID_MAPFILE, XROOTD_GRIDMAP, MACAROON_SECRET)
            )
        )

    def write(self, node_dir: Path, account: ServerAccount) -> None:
        for name, text, mode in (
            (GRID_MAPFILE, self.grid_mapfile, 0o644),
            (XROOTD_GRIDMAP, self.xrootd_gridmap, 0o644),
            (MACAROON_SECRET, self.macaroon_secret, 0o600),
        ):
            (node_dir / name).write_text(text)
            own(node_dir / name, account, mode)


def wait_until_serving(record: LabRun, servers: Runtime, endpoints: Sequence[Endpoint]) -> None:
    """Every port of every node accepts connections, or say which server died and why."""
    deadline = time.monotonic() + READY_TIMEOUT
    pending = [(e, service, port) for e in endpoints for service, port in e.ports.items()]
    while pending:
        failure = servers.failure_detail(record)
        if failure:
            raise UserError(failure)
        pending = [item for item in pending if not tcp_open(item[0].address, item[2], 1.0)]
        if pending and time.monotonic() > deadline:
            endpoint, service, port = pending[0]
            raise UserError(
                f"{endpoint.name} does not serve {service} on {endpoint.address}:{port} after "
                f"{READY_TIMEOUT:.0f}s; see the logs in {Path(record.path).parent / 'nodes'}"
            )
        if pending:
            time.sleep(0.2)

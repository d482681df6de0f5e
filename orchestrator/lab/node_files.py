"""A lab node's files: its folder (config, logs, its copy of the host key), its data directory,
both owned by the server account, and what a runtime is given to start its servers from."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from orchestrator.lab.preflight import ServerAccount
from orchestrator.lab.token_issuer import LabIssuer
from orchestrator.lab.topology import NodePlan
from orchestrator.servers.cluster_roles import STANDALONE, ClusterPlace

# Under a node's folder: who may log in and as whom (servers/access.py), and the key of the
# macaroons its XRootD issues.
GRID_MAPFILE = "grid-mapfile"  # GridFTP: orchestrator DN -> the server account
XROOTD_GRIDMAP = "xrootd-gridmap"  # XRootD: DN -> identity
MACAROON_SECRET = "pki/macaroon-secret"


@dataclass(frozen=True)
class NodeFiles:
    """What `lab up` prepared for one node, on this machine."""

    plan: NodePlan
    node_dir: Path  # logs, generated config, pki/ (hostcert.pem, hostkey.pem), grid-mapfile
    data_root: Path  # the node's memory-backed data directory
    certdir: Path  # the CA's grid-security directory, readable by the servers
    issuer: LabIssuer | None = None  # the lab's token issuer, whose tokens xrootd accepts
    # bench/ only: XRootD without authentication (XrootdSettings.open_access); process runtime
    open_access: bool = False
    # A site lab's nodes (site_servers.py): a data server subscribed to its site's manager,
    # or a redirector (manager, meta-manager), which runs no GridFTP; process runtime only.
    cluster: ClusterPlace = STANDALONE
    gridftp: bool = True

    @property
    def token_audience(self) -> str:
        """The node's own https URL, as the orchestrator names it (transfers.urls)."""
        return f"https://{self.plan.address}:{self.plan.ports['https']}"


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

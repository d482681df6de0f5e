"""The globus-gridftp-server command line and environment (GSI, grid-mapfile).

Used by the lab and by the container image. Verified against globus-gridftp-server 13.24:
the lab's and the images' tests run third-party copies through exactly this command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

GRIDFTP_BINARY = "globus-gridftp-server"
# GSI, and only the grid-mapfile's DNs (the orchestrator's) log in; they may still not rename,
# make or remove directories or list one: a measurement reads the source and writes (gfal2:
# first deletes) its transfer slots. GridFTP has no per-path rules as XRootD's (access.py):
# the source file is read-only (source_file.SOURCE_MODE).
DISABLED_COMMANDS = ("RMD", "MKD", "RNFR", "RNTO", "LIST", "NLST", "MLSD")


@dataclass(frozen=True)
class GridftpSettings:
    """Everything that differs between one gridftp server and another."""

    data_interface: str  # the address advertised in PASV; never loopback for cross-host TPC
    host_cert: Path
    host_key: Path
    certdir: Path  # needs <hash>.0 and <hash>.signing_policy
    grid_mapfile: Path
    log_path: Path
    home_dir: Path  # not a chroot: URLs carry absolute paths
    port: int = 2811
    data_port_range: tuple[int, int] = (20000, 20999)
    log_level: str = "error,warn,info"


def gridftp_command(settings: GridftpSettings) -> list[str]:
    """The foreground server command line (-s: listen, fork per connection, do not detach)."""
    s = settings
    low, high = s.data_port_range
    return [
        GRIDFTP_BINARY,
        "-s",
        "-p",
        str(s.port),
        "-data-interface",
        s.data_interface,
        "-port-range",
        f"{low},{high}",
        "-home-dir",
        str(s.home_dir),
        "-disable-command-list",
        ",".join(DISABLED_COMMANDS),
        "-d",
        s.log_level,
        "-l",
        str(s.log_path),
    ]


def gridftp_environment(settings: GridftpSettings) -> dict[str, str]:
    """GSI settings: where the host credential, the CA directory and the grid-mapfile are."""
    s = settings
    low, high = s.data_port_range
    return {
        "X509_USER_CERT": str(s.host_cert),
        "X509_USER_KEY": str(s.host_key),
        "X509_CERT_DIR": str(s.certdir),
        "GRIDMAP": str(s.grid_mapfile),
        "GLOBUS_TCP_PORT_RANGE": f"{low},{high}",
    }


def render_grid_mapfile(mapping: Mapping[str, str]) -> str:
    """A grid-mapfile: one `"<subject DN>" <local user>` line per mapping."""
    for dn in mapping:
        if '"' in dn:
            raise ValueError(f"a subject DN cannot contain a double quote: {dn}")
    return "".join(f'"{dn}" {user}\n' for dn, user in sorted(mapping.items()))

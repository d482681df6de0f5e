"""Checks before `lab up` touches anything: programs, plugins, the server account, ports, and
whether the link options (capacity, RTT, TCP settings) make sense for the mode."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.lab.sites import SiteLayout
from orchestrator.lab.topology import NETNS, NodePlan, all_ports
from orchestrator.lab.wan import check_wan_tools
from orchestrator.lab.wan_profile import RttMatrix, TcpSettings, rtt_matrix
from orchestrator.servers.xrootd import REQUIRED_PLUGINS, TOKEN_PLUGIN

# program -> the Debian package that provides it
PROGRAMS = {
    "xrootd": "xrootd-server",
    "xrdcp": "xrootd-client",
    "globus-gridftp-server": "globus-gridftp-server-progs",
}
NETNS_PROGRAMS = {"ip": "iproute2", "ss": "iproute2", "tc": "iproute2", "setpriv": "util-linux"}
# plugin -> the Debian package that provides it (the lab's servers accept our tokens)
PLUGINS = {
    **REQUIRED_PLUGINS,
    TOKEN_PLUGIN: "xrootd-scitokens-plugins",
}
LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/local/lib64",
)
SERVER_USER = "tpcbench"  # servers never run as root; xrootd refuses to


def check_packages(
    programs: dict[str, str],
    *,
    path: str | None = None,
    library_dirs: Iterable[str] = LIBRARY_DIRS,
) -> None:
    """Every program on PATH and the XrdHttp plugins installed, else say what to install."""
    missing_packages: list[str] = []
    missing_items: list[str] = []
    for program, package in programs.items():
        if shutil.which(program, path=path) is None:
            missing_items.append(program)
            missing_packages.append(package)
    dirs = [Path(d) for d in library_dirs]
    for plugin, package in PLUGINS.items():
        if not any((d / plugin).exists() for d in dirs):
            missing_items.append(plugin)
            missing_packages.append(package)
    if missing_items:
        packages = " ".join(dict.fromkeys(missing_packages))
        raise UserError(
            f"missing {', '.join(missing_items)}; install them with: make system-deps "
            f"(or: apt-get install {packages})"
        )


@dataclass(frozen=True)
class ServerAccount:
    name: str
    uid: int
    gid: int


def ensure_server_account() -> ServerAccount:
    """As root: the unprivileged `tpcbench` system user, created if missing. Else: ourselves."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return ServerAccount(entry.pw_name, entry.pw_uid, entry.pw_gid)
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        result = subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
             "/nonexistent", "--shell", "/usr/sbin/nologin", SERVER_USER],
            capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise UserError(
                f"cannot create the server user {SERVER_USER}: {result.stderr.strip()}; "
                f"create it with: useradd --system --user-group {SERVER_USER}"
            ) from None
        entry = pwd.getpwnam(SERVER_USER)
    return ServerAccount(entry.pw_name, entry.pw_uid, entry.pw_gid)


def check_reachable_by(account: ServerAccount, folder: Path) -> None:
    """The servers run as `account`: every parent of `folder` must let it pass."""
    if os.geteuid() != 0 or account.uid == 0:
        return
    for parent in [folder, *folder.parents]:
        if not parent.exists():
            continue
        mode = parent.stat()
        passable = mode.st_mode & 0o001 or (mode.st_uid == account.uid and mode.st_mode & 0o100)
        if not passable:
            raise UserError(
                f"{parent} is not reachable by the server user {account.name}; "
                f"run: chmod o+x {parent}, or set TPCBENCH_HOME to another directory"
            )


def check_host_ports_free(plans: Sequence[NodePlan]) -> None:
    """Loopback mode: every port of every node must be bindable on this host."""
    for plan in plans:
        for port in all_ports(plan):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("0.0.0.0", port))
                except OSError:
                    service = next((s for s, p in plan.ports.items() if p == port), "gridftp data")
                    raise UserError(
                        f"port {port} ({plan.name} {service}) is already in use on this host; "
                        "stop what uses it, or choose other ports with: "
                        "tpcbench lab up --base-port <port>"
                    ) from None


def check_links(
    mode: str,
    plans: Sequence[NodePlan],
    rate_gbit: float | None,
    rtt: str | None,
    tcp: TcpSettings | None,
    layout: SiteLayout | None = None,
) -> RttMatrix | None:
    """The link options make sense for this mode; the RTT matrix they ask for."""
    if rate_gbit is not None and rate_gbit <= 0:
        raise UserError(f"--link-capacity must be a positive rate, not {rate_gbit} Gbit/s")
    if rate_gbit is not None and mode != NETNS:
        raise UserError("--link-capacity needs netns mode (root): loopback cannot be shaped")
    if (rtt is not None or tcp is not None) and mode != NETNS:
        raise UserError("--rtt and TCP settings need netns mode (root): loopback has no WAN")
    if rtt is None:
        matrix = None
    else:  # a site lab's --rtt names sites: each host pair takes its sites' RTT
        matrix = layout.host_matrix(rtt) if layout else rtt_matrix(rtt, [p.name for p in plans])
    if mode == NETNS:  # the defaults too: bbr may not be allowed in a namespace here
        (tcp or TcpSettings()).validate()
    if matrix is not None:
        check_wan_tools()
    return matrix

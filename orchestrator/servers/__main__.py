"""Render, run or check a server: the container images' entrypoint.

    python -m orchestrator.servers xrootd [--name N] [--source-size SIZE] [--exec] ...
    python -m orchestrator.servers xrootd --cluster-role manager|server --manager HOST:PORT
        [--cms-port P] [--program xrootd|cmsd] [--exec] ...
    python -m orchestrator.servers gridftp --data-interface IP [--source-size SIZE] [--exec] ...
    python -m orchestrator.servers check --port P [--port P ...] [--host H]

The path options default to the container layout (orchestrator/servers/layout.py), so an
image passes only what differs per node. Without --exec it prints what it would run
(xrootd: the config; gridftp: environment and command line); with --exec it writes the
source file if asked, then replaces itself with the server (the container's init, tini, is
its parent). A cluster node (a site's redirector or one of its data servers) runs two
programs from the one configuration, xrootd and cmsd: `--program` says which one this process
becomes, so a pod runs them as two containers sharing the run directory (the admin path,
through which they talk), and Kubernetes restarts and logs each on its own. `check` exits 0
when every port accepts a TCP connection (the HEALTHCHECK); with --credentials it also fails
once the server must restart to load its renewed certificate (liveness.py says when: between
measurements).
"""

from __future__ import annotations

import argparse
import os
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from orchestrator.errors import UserError
from orchestrator.servers import layout
from orchestrator.servers.cluster_roles import (
    STANDALONE,
    ClusterPlace,
    cmsd_command,
)
from orchestrator.servers.gridftp import GridftpSettings, gridftp_command, gridftp_environment
from orchestrator.servers.liveness import RenewalPolicy, observe, restart_reason
from orchestrator.servers.xrootd import (
    XrootdSettings,
    render_xrootd_config,
    xrootd_command,
    xrootd_environment,
    xrootd_files,
)
from orchestrator.sizes import size_argument

STDERR = "-"  # --log value: write the server's log to standard error (the container log)


def _port_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition(",")
    if not (low.isdigit() and high.isdigit() and 0 < int(low) <= int(high) < 65536):
        raise argparse.ArgumentTypeError(f"{text!r} is not a port range like 20000,20999")
    return int(low), int(high)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host-cert", type=Path, default=layout.HOST_CERT)
    parser.add_argument("--host-key", type=Path, default=layout.HOST_KEY)
    parser.add_argument("--certdir", type=Path, default=layout.CERTDIR, help="hashed CA dir")
    parser.add_argument(
        "--source-size",
        type=size_argument,
        default=None,
        metavar="SIZE",
        help="with --exec: first write the source file of SIZE bytes under the data root",
    )
    parser.add_argument(
        "--log", default=STDERR, help="log file (default '-': standard error, the container log)"
    )
    parser.add_argument("--exec", action="store_true", help="run the server in this process")


def _add_cluster(parser: argparse.ArgumentParser) -> None:
    """A site's redirector or data server (orchestrator/servers/cluster_roles.py)."""
    parser.add_argument(
        "--cluster-role",
        choices=("standalone", "manager", "server"),
        default="standalone",
        help="standalone (default: a single server, as before), manager (a site's redirector) "
        "or server (a data server of a site's manager); a cluster node serves HTTPS on its "
        "xroot port (--https-port must equal --root-port)",
    )
    parser.add_argument(
        "--manager",
        default=None,
        metavar="HOST:PORT",
        help="the site manager's cmsd: a data server subscribes to it; a manager listens on "
        "its port (its own address, which its data servers reach)",
    )
    parser.add_argument(
        "--cms-port",
        type=int,
        default=None,
        metavar="P",
        help="manager only: the port its cmsd listens on (default: the port of --manager)",
    )
    parser.add_argument(
        "--program",
        choices=("xrootd", "cmsd"),
        default="xrootd",
        help="with --exec: the program this process becomes; a cluster node runs both, each "
        "from the same configuration (cmsd: the cluster management service)",
    )


def cluster_place(args: argparse.Namespace) -> ClusterPlace:
    """The ClusterPlace the --cluster-role, --manager and --cms-port options ask for."""
    role = args.cluster_role
    if role == "standalone":
        if args.manager is not None or args.cms_port is not None or args.program != "xrootd":
            raise UserError(
                "--manager, --cms-port and --program cmsd need --cluster-role manager or server"
            )
        return STANDALONE
    if args.manager is None:
        raise UserError(f"--cluster-role {role} needs --manager HOST:PORT")
    host, sep, port = args.manager.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--manager {args.manager!r} is not HOST:PORT")
    if role == "server":
        if args.cms_port is not None:
            raise UserError("--cms-port is a manager's: a data server's cmsd listens on nothing")
        return ClusterPlace(role="server", upstream=args.manager)
    cms_port = int(port) if args.cms_port is None else args.cms_port
    if not 0 < cms_port < 65536:
        raise UserError(f"--cms-port {cms_port} is not a port")
    return ClusterPlace(role="manager", address=host, cms_port=cms_port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.servers",
        description="Render, run or check a tpc-bench server (the images' entrypoint).",
    )
    servers = parser.add_subparsers(dest="server", required=True)

    xrootd = servers.add_parser("xrootd", help="XRootD with HTTPS-TPC and root:// TPC")
    xrootd.add_argument("--name", default=socket.gethostname(), help="default: the host name")
    xrootd.add_argument("--data-root", type=Path, default=layout.DATA_ROOT)
    xrootd.add_argument("--run-dir", type=Path, default=layout.RUN_DIR)
    xrootd.add_argument("--root-port", type=int, default=1094)
    xrootd.add_argument("--https-port", type=int, default=8443)
    xrootd.add_argument(
        "--gridmap",
        type=Path,
        default=layout.XROOTD_GRIDMAP,
        help="DN -> identity map for HTTPS and root:// (see orchestrator/servers/access.py)",
    )
    xrootd.add_argument(
        "--macaroon-secret",
        type=Path,
        default=layout.MACAROON_SECRET,
        help="base64 key for the macaroons this server issues (the same for every server)",
    )
    xrootd.add_argument(
        "--token-issuer",
        default=None,
        metavar="URL",
        help="accept this issuer's tokens in the token area (needs xrootd-scitokens-plugins; "
        "the issuer's CA must be in the system bundle)",
    )
    xrootd.add_argument(
        "--token-audience", default=None, metavar="URL", help="this server's own https URL"
    )
    _add_cluster(xrootd)
    _add_common(xrootd)

    gridftp = servers.add_parser("gridftp", help="globus-gridftp-server with GSI")
    gridftp.add_argument("--data-interface", required=True, help="the address PASV advertises")
    gridftp.add_argument("--grid-mapfile", type=Path, default=layout.GRID_MAPFILE)
    gridftp.add_argument("--home-dir", type=Path, default=layout.DATA_ROOT, help="the data root")
    gridftp.add_argument("--port", type=int, default=2811)
    gridftp.add_argument("--data-ports", type=_port_range, default=(20000, 20999))
    _add_common(gridftp)

    check = servers.add_parser("check", help="exit 0 when every port accepts a connection")
    check.add_argument("--port", type=int, action="append", required=True, dest="ports")
    check.add_argument("--host", default="127.0.0.1")
    check.add_argument("--timeout", type=float, default=3.0)
    check.add_argument(
        "--credentials",
        type=Path,
        default=None,
        metavar="CERT",
        help="also fail when CERT was renewed after the server started and the server has "
        "been idle for --quiet-period (or the renewal waited --max-wait): restart to load it",
    )
    check.add_argument(
        "--data-ports",
        type=_port_range,
        default=None,
        metavar="LOW,HIGH",
        help="with --credentials: connections on these ports keep the server busy too",
    )
    check.add_argument(
        "--quiet-period",
        type=float,
        default=RenewalPolicy.quiet_period,
        metavar="SECONDS",
        help="with --credentials: how long without a connection is between measurements",
    )
    check.add_argument(
        "--max-wait",
        type=float,
        default=RenewalPolicy.max_wait,
        metavar="SECONDS",
        help="with --credentials: restart this long after the renewal even if busy "
        "(default: never while busy)",
    )
    check.add_argument(
        "--state",
        type=Path,
        default=layout.RUN_DIR / "last-busy",
        metavar="FILE",
        help="with --credentials: where checks record the last time they saw a connection",
    )
    check.add_argument(
        "--data-root",
        type=Path,
        default=layout.DATA_ROOT,
        help="with --credentials: names created or deleted here are transfers too",
    )
    check.add_argument("--started-pid", type=int, default=1, help=argparse.SUPPRESS)
    return parser


def check_ports(host: str, ports: Sequence[int], timeout: float) -> int:
    for port in ports:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                pass
        except OSError as exc:
            print(f"{host}:{port}: {exc}", file=sys.stderr)
            return 1
    return 0


def check_credentials(args: argparse.Namespace) -> int:
    """1 when the server must restart to load its renewed certificate (liveness.py: when)."""
    ports = set(args.ports)
    if args.data_ports is not None:
        ports.update(range(args.data_ports[0], args.data_ports[1] + 1))
    try:
        seen = observe(args.credentials, args.started_pid, ports, args.state, args.data_root)
    except OSError as exc:
        print(f"{args.credentials}: {exc.strerror}", file=sys.stderr)
        return 1
    reason = restart_reason(seen, RenewalPolicy(args.quiet_period, args.max_wait))
    if reason is not None:
        print(f"{args.credentials} was renewed after the server started ({reason}): "
              "restart to load it", file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _write_source(data_root: Path, size: int | None, *, token_area: bool = False) -> None:
    if size is None:
        return
    from orchestrator.servers.source_file import ensure_source_file, ensure_token_source

    path, written = ensure_source_file(data_root, size)
    print(f"source file {path}: {'written' if written else 'present'}", file=sys.stderr)
    if token_area:
        print(f"token area source {ensure_token_source(data_root, size)}", file=sys.stderr)


def private_certdir(certdir: Path, run_dir: Path, copy_name: str = "certificates") -> Path:
    """`certdir`, or a private copy of it when others may write to it: XrdTls refuses a CA
    directory with group or world write access, and Kubernetes mounts a ConfigMap volume
    (the chart's grid-security directory) exactly so (mode 0777, or 2775 with fsGroup)."""
    if not certdir.is_dir() or certdir.stat().st_mode & 0o022 == 0:
        return certdir
    copy = run_dir / copy_name
    copy.mkdir(mode=0o755, parents=True, exist_ok=True)
    copy.chmod(0o755)
    for entry in certdir.iterdir():
        if entry.name.startswith("..") or not entry.is_file():
            continue  # the volume's own ..data links; the files are reached through names
        target = copy / entry.name
        target.write_bytes(entry.read_bytes())
        target.chmod(0o644)
    print(
        f"CA directory {certdir} is writable by others (a Kubernetes volume); xrootd uses a "
        f"private copy in {copy}",
        file=sys.stderr,
    )
    return copy


def _xrootd(args: argparse.Namespace) -> tuple[list[str], dict[str, str]] | None:
    place = cluster_place(args)
    if args.exec:
        args.run_dir.mkdir(parents=True, exist_ok=True)
        # cmsd's container starts beside xrootd's: each copies into a directory of its own
        copy_name = "cmsd-certificates" if args.program == "cmsd" else "certificates"
        args.certdir = private_certdir(args.certdir, args.run_dir, copy_name)
    try:
        settings = XrootdSettings(
            name=args.name,
            data_root=args.data_root,
            run_dir=args.run_dir,
            host_cert=args.host_cert,
            host_key=args.host_key,
            certdir=args.certdir,
            gridmap=args.gridmap,
            macaroon_secret=args.macaroon_secret,
            root_port=args.root_port,
            https_port=args.https_port,
            token_issuer=args.token_issuer,
            token_audience=args.token_audience,
            cluster=place,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    if args.token_audience and not args.token_issuer:
        raise UserError("--token-audience needs --token-issuer")
    config = render_xrootd_config(settings)
    if not args.exec:
        sys.stdout.write(config)
        return None
    log = None if args.log == STDERR else Path(args.log)
    if args.program == "cmsd":
        # the same configuration in a file of its own: the xrootd container writes its copy
        # at the same time; cmsd reads neither the authorization files nor the source file
        config_path = args.run_dir / "cmsd.cfg"
        config_path.write_text(config)
        return cmsd_command(config_path, log, args.name), xrootd_environment(settings)
    config_path = args.run_dir / "xrootd.cfg"
    config_path.write_text(config)
    for path, text in xrootd_files(settings).items():
        path.write_text(text)
    if settings.token_issuer is not None:
        Path(xrootd_environment(settings)["XDG_CACHE_HOME"]).mkdir(exist_ok=True)
    _write_source(args.data_root, args.source_size, token_area=settings.token_issuer is not None)
    return xrootd_command(config_path, log, args.name), xrootd_environment(settings)


def _gridftp(args: argparse.Namespace) -> tuple[list[str], dict[str, str]] | None:
    settings = GridftpSettings(
        data_interface=args.data_interface,
        host_cert=args.host_cert,
        host_key=args.host_key,
        certdir=args.certdir,
        grid_mapfile=args.grid_mapfile,
        log_path=Path("/dev/stderr") if args.log == STDERR else Path(args.log),
        home_dir=args.home_dir,
        port=args.port,
        data_port_range=args.data_ports,
    )
    argv = gridftp_command(settings)
    extra = gridftp_environment(settings)
    if not args.exec:
        for key, value in extra.items():
            print(f"{key}={shlex.quote(value)}")
        print(shlex.join(argv))
        return None
    _write_source(args.home_dir, args.source_size)
    return argv, extra


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.server == "check":
        # the certificate first: this check's own connections to the ports must not look busy
        renewal = 0 if args.credentials is None else check_credentials(args)
        return check_ports(args.host, args.ports, args.timeout) or renewal
    try:
        command = _xrootd(args) if args.server == "xrootd" else _gridftp(args)
    except (OSError, UserError) as exc:
        print(f"python -m orchestrator.servers: {exc}", file=sys.stderr)
        return 1
    if command is None:
        return 0
    argv_, extra = command
    os.execvpe(argv_[0], argv_, {**os.environ, **extra})
    return 1  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())

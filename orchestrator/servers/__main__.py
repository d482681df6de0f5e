"""Render or run a server from this module, for container entrypoints.

    python -m orchestrator.servers xrootd --name N --data-root D --run-dir R \
        --host-cert C --host-key K --certdir CA [--exec]
    python -m orchestrator.servers gridftp --data-interface IP --host-cert C --host-key K \
        --certdir CA --grid-mapfile G --log L --home-dir D [--exec]

Without --exec it prints what it would run (xrootd: the config; gridftp: environment and
command line); with --exec it replaces itself with the server, so the pod's pid 1 is it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from orchestrator.servers.gridftp import GridftpSettings, gridftp_command, gridftp_environment
from orchestrator.servers.xrootd import (
    XrootdSettings,
    render_xrootd_config,
    xrootd_command,
    xrootd_environment,
)


def _port_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition(",")
    if not (low.isdigit() and high.isdigit() and 0 < int(low) <= int(high) < 65536):
        raise argparse.ArgumentTypeError(f"{text!r} is not a port range like 20000,20999")
    return int(low), int(high)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m orchestrator.servers")
    servers = parser.add_subparsers(dest="server", required=True)

    xrootd = servers.add_parser("xrootd", help="XRootD with HTTPS-TPC and root:// TPC")
    xrootd.add_argument("--name", required=True)
    xrootd.add_argument("--data-root", type=Path, required=True)
    xrootd.add_argument("--run-dir", type=Path, required=True)
    xrootd.add_argument("--host-cert", type=Path, required=True)
    xrootd.add_argument("--host-key", type=Path, required=True)
    xrootd.add_argument("--certdir", type=Path, required=True)
    xrootd.add_argument("--root-port", type=int, default=1094)
    xrootd.add_argument("--https-port", type=int, default=8443)
    xrootd.add_argument("--log", type=Path, default=None, help="default: RUN_DIR/xrootd.log")
    xrootd.add_argument("--exec", action="store_true", help="write the config and run xrootd")

    gridftp = servers.add_parser("gridftp", help="globus-gridftp-server with GSI")
    gridftp.add_argument("--data-interface", required=True, help="the address PASV advertises")
    gridftp.add_argument("--host-cert", type=Path, required=True)
    gridftp.add_argument("--host-key", type=Path, required=True)
    gridftp.add_argument("--certdir", type=Path, required=True)
    gridftp.add_argument("--grid-mapfile", type=Path, required=True)
    gridftp.add_argument("--log", type=Path, required=True)
    gridftp.add_argument("--home-dir", type=Path, required=True)
    gridftp.add_argument("--port", type=int, default=2811)
    gridftp.add_argument("--data-ports", type=_port_range, default=(20000, 20999))
    gridftp.add_argument("--exec", action="store_true", help="run the server")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.server == "xrootd":
        settings = XrootdSettings(
            name=args.name,
            data_root=args.data_root,
            run_dir=args.run_dir,
            host_cert=args.host_cert,
            host_key=args.host_key,
            certdir=args.certdir,
            root_port=args.root_port,
            https_port=args.https_port,
        )
        config = render_xrootd_config(settings)
        if not args.exec:
            sys.stdout.write(config)
            return 0
        args.run_dir.mkdir(parents=True, exist_ok=True)
        config_path = args.run_dir / "xrootd.cfg"
        config_path.write_text(config)
        argv_ = xrootd_command(config_path, args.log or args.run_dir / "xrootd.log", args.name)
        env = {**os.environ, **xrootd_environment(settings)}
    else:
        settings_g = GridftpSettings(
            data_interface=args.data_interface,
            host_cert=args.host_cert,
            host_key=args.host_key,
            certdir=args.certdir,
            grid_mapfile=args.grid_mapfile,
            log_path=args.log,
            home_dir=args.home_dir,
            port=args.port,
            data_port_range=args.data_ports,
        )
        argv_ = gridftp_command(settings_g)
        extra = gridftp_environment(settings_g)
        if not args.exec:
            for key, value in extra.items():
                print(f"{key}={shlex.quote(value)}")
            print(shlex.join(argv_))
            return 0
        env = {**os.environ, **extra}
    os.execvpe(argv_[0], argv_, env)
    return 1  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())

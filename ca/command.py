"""`ca init|issue-host|issue-client|show`: the CA's own command line (osg-ca-generator's
job), registered under `tpcbench ca`. A bad directory or name raises CAError, which the
`tpcbench` command prints as one line.

The state directory is the caller's to choose (`default_dir`), so the CA knows nothing of
the orchestrator's layout.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from ca.authority import (
    DEFAULT_CA_DAYS,
    DEFAULT_CERT_DAYS,
    CAError,
    CertificateAuthority,
    IssuedCredential,
)
from ca.grid_security import subject_hash
from ca.names import DNError


def register_actions(actions: argparse._SubParsersAction, default_dir: Callable[[], Path]) -> None:
    """Add the CA's actions to `actions`; `--dir` defaults to `default_dir()`."""

    def with_dir(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--dir",
            type=Path,
            default=None,
            help="CA directory (default: $TPCBENCH_HOME/ca)",
        )
        p.set_defaults(default_ca_dir=default_dir)

    init = actions.add_parser("init", help="create the CA (an existing one is kept)")
    with_dir(init)
    init.add_argument("--days", type=int, default=DEFAULT_CA_DAYS, help="validity in days")
    init.add_argument(
        "--subject",
        default=None,
        help="CA subject, e.g. '/DC=org/DC=tpc-bench/CN=tpc-bench CA' (the default)",
    )
    init.set_defaults(func=_init)

    host = actions.add_parser("issue-host", help="issue (or renew) a host certificate")
    with_dir(host)
    host.add_argument("--name", required=True, help="host name: the certificate's CN and DNS SAN")
    host.add_argument("--ip", action="append", default=[], help="an IP address SAN (repeatable)")
    host.add_argument("--dns", action="append", default=[], help="another DNS SAN (repeatable)")
    host.add_argument("--days", type=int, default=DEFAULT_CERT_DAYS, help="validity in days")
    host.set_defaults(func=_issue_host)

    client = actions.add_parser("issue-client", help="issue the orchestrator's client certificate")
    with_dir(client)
    client.add_argument("--name", required=True, help="the certificate's CN")
    client.add_argument("--days", type=int, default=DEFAULT_CERT_DAYS, help="validity in days")
    client.set_defaults(func=_issue_client)

    show = actions.add_parser("show", help="print the CA's subject, hash and paths")
    with_dir(show)
    show.set_defaults(func=_show)


def _directory(args: argparse.Namespace) -> Path:
    return args.dir if args.dir is not None else args.default_ca_dir()


def _open(args: argparse.Namespace) -> CertificateAuthority:
    return CertificateAuthority.load(_directory(args))


def _print_credential(kind: str, cred: IssuedCredential) -> None:
    verb = "issued" if cred.reissued else "kept (still valid)"
    print(f"{kind} certificate {verb}: {cred.subject_dn}")
    print(f"  certificate: {cred.cert}")
    print(f"  key:         {cred.key}")


def _init(args: argparse.Namespace) -> int:
    directory = _directory(args)
    existed = (directory / "ca" / "ca-cert.pem").exists()
    try:
        ca = CertificateAuthority.init(directory, days=args.days, subject=args.subject)
    except DNError as exc:
        raise CAError(str(exc)) from exc
    print(f"{'kept existing' if existed else 'created'} CA {ca.subject_dn} in {directory}")
    print(f"  X509_CERT_DIR: {ca.certdir}")
    return 0


def _issue_host(args: argparse.Namespace) -> int:
    ca = _open(args)
    cred = ca.issue_host(args.name, ips=args.ip, dns=args.dns, days=args.days)
    _print_credential("host", cred)
    return 0


def _issue_client(args: argparse.Namespace) -> int:
    ca = _open(args)
    cred = ca.issue_client(args.name, days=args.days)
    _print_credential("client", cred)
    print(f'  grid-mapfile line: "{cred.subject_dn}" <local user>')
    return 0


def _show(args: argparse.Namespace) -> int:
    ca = _open(args)
    print(f"subject:       {ca.subject_dn}")
    print(f"hash:          {subject_hash(ca.certificate)}")
    print(f"expires:       {ca.certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    print(f"certificate:   {ca.cert_path}")
    print(f"X509_CERT_DIR: {ca.certdir}")
    return 0

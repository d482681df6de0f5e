"""Who may do what on our XRootD servers: the identities, the grid map and the authorization
database that HTTPS and root:// share (docs/install.md, "Security", says it for operators).

Only identities our CA issued for this platform are authorized, and only for what a
measurement needs:
- the orchestrator (its client DN, mapped to ORCHESTRATOR) may create, write, look up and
  delete the benchmark's destination names and read the source file;
- server hosts (any host DN of our CA, mapped to SERVER) may read the source file: the
  destination's `xrdcp --server` of a root:// third-party copy logs in with its host
  certificate;
- nobody may list a directory, and nothing else is open: an anonymous client, a client of
  another CA and any other certificate of ours get a refusal.
A bearer token (SciTokens plugin) or a macaroon the server issued opens what it names, within
what its holder could do: that is how the server-to-server leg of an HTTP-TPC copy, which
XRootD 5.5 makes without a client certificate, is authorized in x509 mode too.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable

from ca.authority import CertificateAuthority
from orchestrator.endpoints import BENCHMARK_PREFIX, SOURCE_PREFIX, TOKEN_AREA

ORCHESTRATOR = "tpcbench-orchestrator"
SERVER = "tpcbench-server"


# XrdMacaroons wants at least 32 bytes of key, base64 in lines of at most 64 characters (as
# `openssl rand -base64` writes): 48 bytes make exactly one such line.
MACAROON_KEY_BYTES = 48


def new_macaroon_secret() -> str:
    """A macaroon key file's text: every server of a lab or a release shares one."""
    return base64.b64encode(os.urandom(MACAROON_KEY_BYTES)).decode() + "\n"


def dn_prefix(dn: str) -> str:
    """`/DC=org/DC=tpc-bench/OU=Services/CN=lab-1` -> `/DC=org/DC=tpc-bench/OU=Services/CN=`."""
    head, sep, _ = dn.rpartition("/CN=")
    if not sep:
        raise ValueError(f"{dn!r} has no CN: cannot derive the DN prefix of its kind")
    return head + sep


def hosts_dn_prefix(ca: CertificateAuthority) -> str:
    """What every host DN `ca` issues begins with: the servers' identity in the grid map."""
    return dn_prefix(ca.host_subject_dn("node"))


def render_xrootd_gridmap(orchestrator_dns: Iterable[str], host_dn_prefix: str) -> str:
    """XrdOucGMap's file for `http.gridmap` and gsi's `-gridmap`: exact orchestrator DNs, and
    every DN beginning with the hosts' prefix (XrdOucGMap's `^` form)."""
    lines = [f'"{dn}" {ORCHESTRATOR}' for dn in sorted(set(orchestrator_dns))]
    lines.append(f'"^{host_dn_prefix}" {SERVER}')
    for line in lines:
        if line.count('"') != 2:
            raise ValueError(f"a subject DN cannot contain a double quote: {line}")
    return "\n".join([*lines, ""])


def render_authdb() -> str:
    """XrdAcc's database: for each identity, its longest path prefix first.

    Privileges: r read, l look up (stat), a everything on a name (create, write, delete,
    look up); nothing is given on `/` itself, so no one can list. The token area is not
    named: only a valid token opens it.
    """
    source = SOURCE_PREFIX
    return (
        f"u {ORCHESTRATOR} {source} rl {BENCHMARK_PREFIX} a\n"
        f"u {SERVER} {source} rl\n"
        f"# {TOKEN_AREA}/: bearer tokens only (the SciTokens plugin)\n"
    )

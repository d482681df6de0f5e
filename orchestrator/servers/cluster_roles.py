"""An XRootD node's place in a cluster: standalone, a site's manager (its redirector), a data
server subscribed to a manager, or a meta-manager above site managers (a regional or global
redirector). Verified against Debian's xrootd 5.5.3 (tests/servers/test_server_redirector.py).

A hierarchy of three levels (site managers, a regional level, a global level at the top): the
top is the meta-manager; a level between is a **manager with an upstream** (its cmsd logs in
to the meta-manager above, the site managers below log in to it). A meta-manager cannot have
an upstream: its cmsd subscribes to nothing (XrdCmsConfig::xmang keeps no manager list for a
meta-manager), and its xrootd asks the cmsd of the first `all.manager` line, so
`all.role meta manager` + `all.manager meta <global>` (as some AAA configurations are quoted)
made the regional level answer 500 to every lookup on 5.5.3, while a manager there redirected
global -> regional -> site -> data server (tried on loopback, and in a site lab).

Each clustered node runs two programs from ONE configuration file: `xrootd` (serves root:// and
HTTPS, and redirects) and `cmsd` (the cluster management service: servers report to their
manager's cmsd, which answers the manager's xrootd where a file is). So:
- `xrd.port` is given per program (`if exec xrootd` / `if exec cmsd`); a data server's cmsd
  only connects out and listens on nothing;
- XrdHttp shares the xroot port: a redirect (HTTP 302/307 or kXR_redirect) names the data
  server's xroot port, so HTTPS must answer there too; its `xrd.protocol` line is inside
  `if exec xrootd ... fi`, or cmsd binds the same port too and fails ("Unable to bind socket");
- `http.desthttps yes`: XrdHttp's redirects say https://, not http://;
- `cms.delay` (CmsDelay): the lab's values, not production's; see there.

"standalone" renders exactly the configuration of a single server, as before clusters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

CMSD_BINARY = "cmsd"

ClusterRole = Literal["standalone", "manager", "server", "meta-manager"]
CLUSTER_ROLES: tuple[ClusterRole, ...] = ("standalone", "manager", "server", "meta-manager")
# all.role's words for each role.
_ROLE_WORDS = {"manager": "manager", "server": "server", "meta-manager": "meta manager"}


@dataclass(frozen=True)
class CmsDelay:
    """`cms.delay`, in seconds. The defaults are the values xrootd's own cluster tests run with,
    which the lab keeps, not production's:
    - startup 2 (xrootd: 90): a manager waits this long after it starts for its servers to
      log in before it redirects anyone; a lab starts all its servers at once, within seconds;
    - lookup 1 (xrootd: 5): the longest a client is stalled while the manager asks its servers
      where a file is; a name no server has costs a few of these (about 2.7 s on loopback);
    - qdl 2 (xrootd: 5): how long a manager's query to its servers stays open;
    - suspend 1: how long a suspended server is waited for;
    - drop 5 (xrootd: 600): how long a data server that went away stays known as offline
      before its manager drops it. Until then the manager cannot be sure that a new name is
      nowhere in its site, so it stalls every new file (a TPC's destination) rather than
      place it: a stopped data server stops the site's writes for this long (measured:
      docs/sites.md, tests/lab/test_lab_site_campaign.py).
    The lookup delay is part of what a redirector costs: measurements through redirectors
    must say which values they ran with (cms_delay_line is in the config)."""

    startup: int = 2
    lookup: int = 1
    qdl: int = 2
    suspend: int = 1
    drop: int = 5

    def line(self) -> str:
        return (
            f"cms.delay startup {self.startup} lookup {self.lookup} "
            f"qdl {self.qdl} suspend {self.suspend} drop {self.drop}"
        )


# `cms.space min`: the free space below which a data server gets no new file, and the
# high-water mark above which it gets them again. XRootD's default is 10 GB (and 2%), more
# than a benchmark volume holds: the chart's is a tmpfs sized for the source file and K
# copies (docs/install.md), so its manager answered every write "No servers are available to
# write the file" on real kubelets. 64 MiB / 128 MiB: room for a small copy, no more.
SPACE_LINE = "cms.space min 64m 128m"


@dataclass(frozen=True)
class ClusterPlace:
    """Where an XRootD node sits.

    - address, cms_port: a redirector's (manager, meta-manager) own cmsd, which the nodes
      below it subscribe to;
    - upstream: "host:port" of the cmsd this node subscribes to: a data server's manager
      (required), a manager's meta-manager (optional), none for a meta-manager.
    """

    role: ClusterRole = "standalone"
    address: str | None = None
    cms_port: int | None = None
    upstream: str | None = None
    delay: CmsDelay = field(default_factory=CmsDelay)

    def __post_init__(self) -> None:
        if self.role not in CLUSTER_ROLES:
            raise ValueError(f"cluster role {self.role!r} is not one of {', '.join(CLUSTER_ROLES)}")
        redirector = self.role in ("manager", "meta-manager")
        if redirector and (self.address is None or self.cms_port is None):
            raise ValueError(f"a {self.role} needs its own cmsd address and port")
        if not redirector and (self.address is not None or self.cms_port is not None):
            raise ValueError(f"a {self.role} node runs no cmsd others subscribe to")
        if self.role == "server" and self.upstream is None:
            raise ValueError("a data server needs its manager's cmsd address (upstream)")
        if self.role == "standalone" and self.upstream is not None:
            raise ValueError("a standalone server subscribes to no manager")
        if self.role == "meta-manager" and self.upstream is not None:
            raise ValueError(
                "a meta-manager subscribes to no manager (xrootd's cmsd ignores it); make a "
                "level between the top and the sites a manager with that upstream instead"
            )
        if self.upstream is not None:
            _host_port(self.upstream)
            if redirector and self.upstream == f"{self.address}:{self.cms_port}":
                raise ValueError(f"a {self.role} cannot subscribe to its own cmsd {self.upstream}")

    @property
    def clustered(self) -> bool:
        return self.role != "standalone"


STANDALONE = ClusterPlace()


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{text!r} is not host:port")
    return host, int(port)


def listen_lines(place: ClusterPlace, root_port: int, https_port: int) -> list[str]:
    """The lines that say what each program listens on and which cluster it is part of.

    Standalone: `xrd.port` and XrdHttp on its own port, exactly as a single server had them.
    """
    if not place.clustered:
        return [f"xrd.port {root_port}", f"xrd.protocol XrdHttp:{https_port} libXrdHttp.so"]
    lines = [f"all.role {_ROLE_WORDS[place.role]}"]
    if place.role == "meta-manager":
        lines.append(f"all.manager meta {place.address}:{place.cms_port}")
    elif place.role == "manager":
        if place.upstream is not None:
            lines.append(f"all.manager meta {place.upstream}")
        lines.append(f"all.manager {place.address}:{place.cms_port}")
    else:
        lines.append(f"all.manager {place.upstream}")
    lines.append(f"xrd.port {root_port} if exec xrootd")
    if place.cms_port is not None:
        lines.append(f"xrd.port {place.cms_port} if exec cmsd")
    lines += [
        place.delay.line(),
        *([SPACE_LINE] if place.role == "server" else []),
        "if exec xrootd",
        # HTTPS on the xroot port: a redirect goes to the data server's xroot port.
        f"xrd.protocol XrdHttp:{root_port} libXrdHttp.so",
        "http.desthttps yes",
        "fi",
    ]
    return lines


def cmsd_command(config_path: Path, log_path: Path | None, name: str) -> list[str]:
    """The foreground cmsd command line beside xrootd_command's (same config, same -n NAME:
    both share the admin path, through which they talk). Its log is NAME/<log name>."""
    log = ["-l", str(log_path)] if log_path is not None else []
    return [CMSD_BINARY, "-n", name, "-c", str(config_path), *log]

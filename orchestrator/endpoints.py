"""The shape every part agrees on: a storage node and the credentials used to drive it.

Discovery (lab inventory or Kubernetes) produces `Endpoint`s; transfer tools, latency probes
and the campaign planner consume them.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ca.tokens import TokenMinter

DEFAULT_PORTS: dict[str, int] = {"https": 8443, "root": 1094, "gridftp": 2811}
# What a site is called wherever sites are named: the lab's --sites, the webapp's fields.
SITE_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")


def reported_site(site: str | None) -> str | None:
    """`site` as a measurement names it: None unless it is a site name (a Kubernetes zone
    label such as us-east-1a is a node's site for discovery, not one the webapp takes)."""
    return site if site is not None and SITE_NAME.match(site) else None


@dataclass(frozen=True)
class Endpoint:
    """One node under test: an XRootD-HTTPS server and a GridFTP server on one address.

    URL namespaces: XRootD exports `data_root` as `/`, so a file `data_root + name` is
    `https://address:ports[https]/name` and `root://address:ports[root]//name`; GridFTP
    serves absolute paths, so the same file is `gsiftp://address:ports[gridftp]/data_root/name`.
    """

    name: str
    address: str
    ports: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PORTS))
    data_root: str = "/data"
    host_dn: str | None = None
    netns: str | None = None  # lab only: the network namespace the node lives in
    # Kubernetes only: "namespace/name" of the node's XRootD server pod (its iperf3 runs there).
    pod: str | None = None
    site: str | None = None
    # A site's redirector (an XRootD manager): what is sent to it goes on to a data server.
    redirector: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    link_gbps: float | None = None  # the node's link capacity, when known (a node label)
    # The node's TCP buffer maximum in bytes (tcp_rmem / tcp_wmem), when known (the lab sets it).
    tcp_buffer: int | None = None
    # The RTT (ms) to each other node that an emulated WAN promises (lab --rtt); empty otherwise.
    rtt_targets_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Endpoint:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class ClientCredentials:
    """What the orchestrator presents to servers: a client certificate and the CA directory,
    and, where servers trust a token issuer of ours, what mints its tokens."""

    cert: Path
    key: Path
    certdir: Path
    tokens: TokenMinter | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "cert": str(self.cert),
            "key": str(self.key),
            "certdir": str(self.certdir),
        }
        if self.tokens is not None:
            data["tokens"] = self.tokens.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientCredentials:
        tokens = data.get("tokens")
        return cls(
            cert=Path(data["cert"]),
            key=Path(data["key"]),
            certdir=Path(data["certdir"]),
            tokens=TokenMinter.from_json(tokens) if tokens else None,
        )


# Every name a measurement reads or writes starts so; the servers let the orchestrator's DN
# use them (servers/access.py), and the token endpoint grants no scope beyond them.
BENCHMARK_PREFIX = "/tpcbench-"
SOURCE_PREFIX = "/tpcbench-source-"


def source_name(file_size: int) -> str:
    """The name (under an endpoint's data root) of the source file of `file_size` bytes."""
    return f"{SOURCE_PREFIX}{file_size}"


# Where token-authorized transfers read and write: only a valid token opens it, while the
# rest of the namespace is for our CA's identities (servers/access.py).
TOKEN_AREA = "/tokens"


def in_token_area(name: str) -> str:
    """`name` (a path under the data root) moved into the token area."""
    return TOKEN_AREA + name

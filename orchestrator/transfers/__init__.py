"""Transfer tools, one class per protocol, found by name in a plain registry.

The client is a dimension beside the protocol: `native` (our own drivers: httpx COPY,
globus-url-copy, xrdcp) or `gfal2` (`gfal-copy` for every protocol); `transfer_tool`
picks the class for a (protocol, client) pair.
"""

from __future__ import annotations

from typing import Any

from orchestrator.transfers.base import (
    AUTH_MODES,
    DEFAULT_TIMEOUT,
    Auth,
    ProgressCallback,
    TransferTool,
)
from orchestrator.transfers.checksums import CHECKSUMS, DEFAULT_CHECKSUM, Checksum
from orchestrator.transfers.gfal2 import Gfal2Tpc
from orchestrator.transfers.gridftp import GridFtpTpc
from orchestrator.transfers.https import HttpsTpc
from orchestrator.transfers.record import ERROR_CLASSES, ProgressPoint, TransferRecord
from orchestrator.transfers.root import XrootdTpc

TRANSFER_TOOLS: dict[str, type[TransferTool]] = {
    "https": HttpsTpc,
    "gridftp": GridFtpTpc,
    "root": XrootdTpc,
}
CLIENTS: tuple[str, ...] = ("native", "gfal2")
DEFAULT_CLIENT = "native"


def transfer_tool(
    protocol: str, client: str = DEFAULT_CLIENT, *, mode: str = "pull", **options: Any
) -> TransferTool:
    """A tool for `protocol` driven by `client`.

    `mode` (pull or push) is HTTP-TPC's; root:// and GridFTP TPC have no choice, so only
    "pull" is accepted for them. Other options go to the class (e.g. dcau=True for the
    native gridftp tool). Raises ValueError for an unknown protocol, client or option.
    """
    if protocol not in TRANSFER_TOOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {sorted(TRANSFER_TOOLS)}")
    if client not in CLIENTS:
        raise ValueError(f"unknown client {client!r}; choose one of {list(CLIENTS)}")
    if mode not in ("pull", "push"):
        raise ValueError(f"mode must be pull or push, not {mode!r}")
    if mode != "pull" and protocol != "https":
        raise ValueError(f"push mode is for https only; {protocol} TPC has no pull/push choice")
    if protocol == "https":
        options["mode"] = mode
    if client == "gfal2":
        return Gfal2Tpc(protocol, **options)
    try:
        return TRANSFER_TOOLS[protocol](**options)
    except TypeError:
        named = ", ".join(options)
        raise ValueError(f"the native {protocol} tool takes no option {named}") from None


def auth_refusal(tool: TransferTool, auth: str) -> str | None:
    """None when `tool` can authorize with `auth`, else why not, in one line."""
    if auth not in AUTH_MODES:
        return f"unknown auth {auth!r}; choose one of {', '.join(AUTH_MODES)}"
    if auth not in tool.auths:
        how, takes = f"{tool.name} by the {client_of(tool)} client", ", ".join(tool.auths)
        return f"{how} with {auth}: it authorizes with {takes} only"
    return None


def combination_refusal(tool: TransferTool, auth: str, checksum: str = "none") -> str | None:
    """None when `tool` can authorize with `auth` and take the `checksum` step so, else why
    not, in one line (a tool names the auths its checksum step works with, if fewer)."""
    refusal = auth_refusal(tool, auth)
    if refusal is not None or checksum == "none":
        return refusal
    if checksum not in CHECKSUMS:
        return f"unknown checksum {checksum!r}; choose one of {', '.join(CHECKSUMS)}"
    if tool.checksum_auths is not None and auth not in tool.checksum_auths:
        how = f"{tool.name} by the {client_of(tool)} client with {auth}"
        return f"{how} and checksum {checksum}: {tool.checksum_refusal}"
    return None


def unsupported_reason(protocol: str, client: str, auth: str, checksum: str = "none") -> str | None:
    """None when (protocol, client, auth, checksum) can be measured, else why not, in one
    line."""
    try:
        tool = transfer_tool(protocol, client)
    except ValueError as exc:
        return str(exc)
    return combination_refusal(tool, auth, checksum)


def client_of(tool: TransferTool) -> str:
    """Which client a tool instance is (`native` unless the class says otherwise)."""
    return str(getattr(tool, "client", DEFAULT_CLIENT))


__all__ = [
    "AUTH_MODES",
    "CHECKSUMS",
    "CLIENTS",
    "DEFAULT_CHECKSUM",
    "DEFAULT_CLIENT",
    "DEFAULT_TIMEOUT",
    "ERROR_CLASSES",
    "TRANSFER_TOOLS",
    "Auth",
    "Checksum",
    "Gfal2Tpc",
    "GridFtpTpc",
    "HttpsTpc",
    "ProgressCallback",
    "ProgressPoint",
    "TransferRecord",
    "TransferTool",
    "XrootdTpc",
    "auth_refusal",
    "client_of",
    "combination_refusal",
    "transfer_tool",
    "unsupported_reason",
]

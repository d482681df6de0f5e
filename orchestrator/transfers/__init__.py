"""Transfer tools, one class per protocol, found by name in a plain registry."""

from __future__ import annotations

from orchestrator.transfers.base import DEFAULT_TIMEOUT, ProgressCallback, TransferTool
from orchestrator.transfers.gridftp import GridFtpTpc
from orchestrator.transfers.https import HttpsTpc
from orchestrator.transfers.record import ERROR_CLASSES, ProgressPoint, TransferRecord
from orchestrator.transfers.root import XrootdTpc

TRANSFER_TOOLS: dict[str, type[TransferTool]] = {
    "https": HttpsTpc,
    "gridftp": GridFtpTpc,
    "root": XrootdTpc,
}

__all__ = [
    "DEFAULT_TIMEOUT",
    "ERROR_CLASSES",
    "TRANSFER_TOOLS",
    "GridFtpTpc",
    "HttpsTpc",
    "ProgressCallback",
    "ProgressPoint",
    "TransferRecord",
    "TransferTool",
    "XrootdTpc",
]

"""The checksum step of a transfer: what FTS does after a copy, timed as the `checksum` phase.

With `checksum="adler32"` a transfer does not end when the copy's protocol says success: the
client then asks the source server and the destination server for the file's adler32 (the
source first, then the destination, as gfal2's "both" mode asks them) and compares the two.
A difference fails the transfer with the error class `checksum-mismatch`; a server that will
not give a digest fails it like any refusal. How each protocol asks: HTTPS by RFC 3230
(`HEAD` with `Want-Digest`), root:// by `query checksum` (`xrdfs`), GridFTP by `CKSM`
(globus-url-copy `-verify-checksum`); gfal2 uses its own option (`-K`). XRootD computes a
digest when first asked and keeps it in the file's extended attributes, as WLCG storage keeps
the checksum it stores on write (docs/measurements.md, "The checksum step").
"""

from __future__ import annotations

import re
from typing import Literal

from orchestrator.transfers.record import ErrorClass

# `none` (default: the paper's measurements, no checksum) or the algorithm FTS compares.
Checksum = Literal["none", "adler32"]
CHECKSUMS: tuple[str, ...] = ("none", "adler32")
DEFAULT_CHECKSUM: Checksum = "none"

# One `algorithm=value` of an RFC 3230 `Digest` header (values may hold `=`: base64).
_DIGEST_ITEM = re.compile(r"\s*([A-Za-z0-9_-]+)=([^,\s]+)\s*")


class ChecksumStepError(Exception):
    """The checksum step failed: `error_class` says how (a refusal, a mismatch, ...)."""

    def __init__(self, error_class: ErrorClass, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class


def check_checksum(value: str) -> Checksum:
    """`value` when it is a known checksum choice; ValueError naming the choices otherwise."""
    if value not in CHECKSUMS:
        raise ValueError(f"unknown checksum {value!r}; choose one of {', '.join(CHECKSUMS)}")
    return value  # type: ignore[return-value]


def digest_from_header(header: str | None, algorithm: str) -> str | None:
    """The value for `algorithm` in a `Digest` header (names compare case-insensitively)."""
    for item in (header or "").split(","):
        match = _DIGEST_ITEM.fullmatch(item)
        if match is not None and match.group(1).lower() == algorithm.lower():
            return match.group(2)
    return None


def digest_from_query(output: str, algorithm: str) -> str | None:
    """The value in `xrdfs ... query checksum` output: `adler32 0a1b2c3d`."""
    for line in output.splitlines():
        name, _, value = line.strip().partition(" ")
        if name.lower() == algorithm.lower() and value.strip():
            return value.strip()
    return None


def normalized(algorithm: str, value: str) -> str:
    """adler32 digests as 8 lower-case hex digits (servers may drop leading zeros)."""
    if algorithm == "adler32":
        return value.lower().zfill(8)
    return value


def compare_digests(algorithm: str, source: str, destination: str) -> None:
    """Raise `ChecksumStepError("checksum-mismatch")` when the two digests differ."""
    if normalized(algorithm, source) != normalized(algorithm, destination):
        raise ChecksumStepError(
            "checksum-mismatch",
            f"{algorithm} checksum mismatch: source {source}, destination {destination}",
        )

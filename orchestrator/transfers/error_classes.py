"""Map what a tool or server said into one error class (see docs/measurements.md)."""

from __future__ import annotations

import re

from orchestrator.transfers.record import ErrorClass

# Checked in order: the first class whose pattern matches wins. A checksum mismatch first
# (its message may name the file), then stalls (a server-side "timed out" may mention the
# connection), then the missing file, then TLS/GSI trust before generic auth (GSI trust
# failures also say "Authentication Failed").
_PATTERNS: tuple[tuple[ErrorClass, re.Pattern[str]], ...] = (
    # The copy completed and its checksum step compared two different digests, in each
    # client's words: gfal2 ("CHECKSUM MISMATCH", "do not match"), globus-url-copy
    # ("checksum verification failure for ..."), XrdCl ("[ERROR] CheckSum error").
    (
        "checksum-mismatch",
        re.compile(
            r"checksum (?:mismatch|verification fail(?:ed|ure)|error\b|"
            r"values? (?:do(?:es)? not|don't) match)|"
            r"checksums? (?:do(?:es)? not|don't) match|mismatch\b.*\bchecksum",
            re.I,
        ),
    ),
    ("timeout", re.compile(r"timed? ?out|timeout|stall", re.I)),
    (
        "not-found",
        re.compile(
            r"status code 404|\b404 not found|no such file|not found|does ?n[o']t exist|"
            r"\[3011\]|kXR_NotFound",
            re.I,
        ),
    ),
    (
        "tls",
        re.compile(
            r"certificate verif(?:y|ication) failed|issuer is not trusted|ssl|tls|"
            r"unable to get local issuer|untrusted|"
            r"self[- ]signed|trusted ca|could not verify credential|unknown ca|bad certificate|"
            r"certificate (?:has )?expired",
            re.I,
        ),
    ),
    (
        "auth",
        re.compile(
            r"status code 40[13]|\b40[13]\b|permission denied|not authori[sz]ed|unauthori[sz]ed|"
            r"forbidden|authentication failed|authorization|no local mapping|gridmap|"
            r"\[3010\]|kXR_NotAuthorized|\b530\b",
            re.I,
        ),
    ),
    (
        "connect",
        re.compile(
            r"connection refused|could ?n[o']?t connect|failed to connect|no route to host|"
            r"network is unreachable|name or service not known|could not resolve|"
            r"unable to connect|\[FATAL\] connection error|\[3001\]",
            re.I,
        ),
    ),
    (
        "killed",
        re.compile(
            r"connection reset|reset by peer|peer closed|broken pipe|end[- ]of[- ]file|"
            r"unexpected eof|socket error|connection (?:was )?closed|server disconnected|"
            r"connection terminated abruptly|"
            r"connection lost|incomplete|killed",
            re.I,
        ),
    ),
)


# GSI (GridFTP's TLS with X509) failures quote file names and "not found" in their chains;
# they are trust (tls) or credential/mapping (auth) problems, never a missing data file.
_GSI = re.compile(r"globus_gsi|GSS Major|gss_assist|credential", re.I)


def classify_message(message: str) -> ErrorClass:
    """The error class a failure message points at; `remote-failure` when nothing else fits."""
    if _GSI.search(message) and not _pattern("timeout").search(message):
        return "tls" if _pattern("tls").search(message) else "auth"
    for error_class, pattern in _PATTERNS:
        if pattern.search(message):
            return error_class
    return "remote-failure"


def _pattern(error_class: ErrorClass) -> re.Pattern[str]:
    return next(p for c, p in _PATTERNS if c == error_class)


def classify_http_status(status: int, detail: str = "") -> ErrorClass:
    """The error class of a non-2xx answer to the COPY request itself.

    A 5xx may carry the remote side's reason (XRootD answers a multi-stream pull whose
    source is missing with 500 "Remote side failed with status code 404"), so it is read too.
    """
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not-found"
    return classify_message(detail) if detail else "remote-failure"


def outcome_of(returncode: int | None, timed_out: bool, stderr: str, timeout: float) -> dict:
    """Error class and message of a finished transfer command (shared by gridftp and root)."""
    if timed_out:
        return {"error_class": "timeout", "message": f"killed after the {timeout:g} s timeout"}
    text = " ".join(_meaningful_lines(stderr.splitlines()))
    if returncode == 0:
        return {"error_class": None, "message": ""}
    if returncode is not None and returncode < 0:
        return {"error_class": "killed", "message": f"ended by signal {-returncode}: {text}"}
    return {"error_class": classify_message(text), "message": text or f"exit code {returncode}"}


def _meaningful_lines(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip()]

"""gfal2 as the TPC client: `gfal-copy` between two URLs of one protocol, as a subprocess.

The same copies as the native tools, driven the way FTS and grid operators drive them:
Debian's gfal2-util with its http, xrootd and gridftp plugins (docs/measurements.md#clients).
With tokens (https and root://), each end gets a least-scope token of its own (gfal2_tokens).
With `checksum="adler32"`, gfal2's own check: `-K ADLER32 --checksum-mode both`, what FTS
asks of gfal2 (when each digest is asked, and how it is timed: gfal2_events).
"""

from __future__ import annotations

import errno
import math
import re
import shutil
from collections.abc import Callable

from ca.tokens import TokenError
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.transfers.base import (
    DEFAULT_TIMEOUT,
    Auth,
    TransferObservation,
    TransferRequest,
    TransferTool,
)
from orchestrator.transfers.checksums import Checksum
from orchestrator.transfers.error_classes import classify_message, outcome_of
from orchestrator.transfers.gfal2_events import Gfal2Events
from orchestrator.transfers.gfal2_tokens import (
    TOKEN_PROTOCOLS,
    bearer_copy_argv,
    bearer_copy_environment,
    endpoint_tokens,
    redact,
    with_authz,
)
from orchestrator.transfers.gridftp import credential_env
from orchestrator.transfers.https import Mode
from orchestrator.transfers.process import run_process
from orchestrator.transfers.record import ErrorClass, TransferRecord
from orchestrator.transfers.root import _LOG_LINE as XRDCL_LOG_LINE
from orchestrator.transfers.root import _SESSION_LOST as XRDCL_SESSION_LOST
from orchestrator.transfers.root import xrdcp_environment
from orchestrator.transfers.urls import gsiftp_url, https_url, root_url

GFAL_COPY = "gfal-copy"
# gfal-copy runs the first python on PATH that imports gfal2; a virtualenv's python cannot.
GFAL_PYTHON = "/usr/bin/python3"
# gfal2 2.21 sends `Credential: gridsite` by default, which XRootD 5.5 answers with 400.
NO_DELEGATION_HEADER = "HTTP PLUGIN:HEADERS=Credential: none"
# XRootD's root:// TPC takes at most 15 streams (as `xrdcp --streams` does).
MAX_ROOT_STREAMS = 15
URLS: dict[str, Callable[[Endpoint, str], str]] = {
    "https": https_url,
    "root": root_url,
    "gridftp": gsiftp_url,
}

# gfal2's checksum algorithm names for ours.
_ALGORITHMS: dict[Checksum, str] = {"adler32": "ADLER32"}
# A failed copy ends with "gfal-copy error: ERRNO (strerror) - message" on stderr.
_ERROR = re.compile(r"gfal-copy error: (\d+) \(([^)]*)\) - ", re.S)
# A server that closed the connection mid-handshake or mid-answer is gone, not a trust
# failure, though davix words it "SSL ... unexpected eof".
_PEER_GONE = re.compile(r"unexpected eof|could not read status line", re.I)
# What gfal2's errno says when its message names nothing our patterns know.
_ERRNO_CLASSES: dict[int, ErrorClass] = {
    errno.ENOENT: "not-found",
    errno.EACCES: "auth",
    errno.EPERM: "auth",
    errno.ETIMEDOUT: "timeout",
    errno.ECONNREFUSED: "connect",
    errno.EHOSTDOWN: "connect",
    errno.EHOSTUNREACH: "connect",
    errno.ENETUNREACH: "connect",
    errno.ECONNRESET: "killed",
    errno.ECONNABORTED: "killed",
}


def gfal_copy_available() -> bool:
    return shutil.which(GFAL_COPY) is not None


def gfal_copy_argv(
    protocol: str,
    source_url: str,
    destination_url: str,
    streams: int,
    *,
    mode: Mode = "pull",
    timeout: float = DEFAULT_TIMEOUT,
    checksum: Checksum = "none",
) -> list[str]:
    """The exact command line (shown in docs/measurements.md#clients)."""
    # Our own timer ends the process; gfal2's own limits (1800 s, 3600 s) must not come first.
    seconds = str(math.ceil(timeout))
    argv = [GFAL_COPY, "-v", "-f", "-t", seconds, "-T", seconds]
    if protocol == "https":
        argv += ["-D", NO_DELEGATION_HEADER, "--copy-mode", mode, "-n", str(streams)]
    elif protocol == "gridftp":
        argv += ["-n", str(streams)]
    # root:// ignores -n: its streams come from the environment (gfal_environment).
    if checksum != "none":
        argv += ["-K", _ALGORITHMS[checksum], "--checksum-mode", "both"]
    return [*argv, source_url, destination_url]


def gfal_environment(
    protocol: str,
    creds: ClientCredentials,
    streams: int,
    src: Endpoint,
    dst: Endpoint,
    auth: Auth = "x509",
    checksum: Checksum = "none",
) -> dict[str, str]:
    """The client certificate for every plugin (with tokens only the CA directory: the token
    alone must authorize; but root:// logs in with GSI only, and its token in the URL then
    decides what that login may do in the token area, where the certificate has no rights),
    and root://'s GSI login to `src` and `dst`, stream count and fail-fast, as xrdcp's; with a
    checksum, root:// logs at XrdCl's debug level, which tells when its checksum step begins
    (gfal2_events)."""
    env = {**credential_env(creds), "GFAL_PYTHONBIN": GFAL_PYTHON}
    if auth == "token" and protocol != "root":
        del env["X509_USER_CERT"], env["X509_USER_KEY"]
    if protocol == "root":
        # XrdCl's error log, as xrdcp -d 1 prints it: tells a lost session from a refused one.
        env.update(xrdcp_environment(creds, src, dst), XRD_LOGLEVEL="Error")
        # `xrdcp --streams S` makes the destination run `xrdcp --server -S S+1`; XrdCl passes
        # this variable on as is, so S+1 gives the destination the same pull as native.
        env["XRD_SUBSTREAMSPERCHANNEL"] = str(streams + 1)
        if checksum != "none":
            env["XRD_LOGLEVEL"] = "Debug"
    return env


def gfal_outcome(
    returncode: int | None,
    timed_out: bool,
    stderr: str,
    timeout: float,
    *,
    copy_done: bool = False,
) -> dict[str, str | None]:
    """Error class (None: success) and message from gfal-copy's exit and its error line.

    A connection error is `killed` when XrdCl's log (root://) says an open session broke.
    gfal2 2.21's gridftp plugin sometimes crashes while the process exits (`free(): invalid
    pointer`, SIGABRT or SIGSEGV) after a complete copy: with `copy_done` (TRANSFER:EXIT
    seen) and no error line, that is a success whose message tells of the crash.
    """
    found = _ERROR.search(stderr)
    signalled = returncode is not None and returncode < 0
    if signalled and copy_done and found is None and not timed_out:
        crash = " ".join(stderr.split())[-200:]
        return {
            "error_class": None,
            "message": f"gfal-copy ended by signal {-returncode} after the copy completed "
            f"(TRANSFER:EXIT): {crash}",
        }
    # An error line decides even if the process then crashed on its way out.
    if found is None or timed_out or returncode == 0:
        return outcome_of(returncode, timed_out, stderr, timeout)
    # XrdCl's log goes on while the process ends: not part of the error
    said = stderr[found.start() :].splitlines()
    message = " ".join(" ".join(x for x in said if not XRDCL_LOG_LINE.match(x)).split())
    text = stderr[found.end() :]
    error_class = "killed" if _PEER_GONE.search(text) else classify_message(text)
    if error_class == "remote-failure":
        error_class = _ERRNO_CLASSES.get(int(found.group(1)), "remote-failure")
    if error_class == "connect" and XRDCL_SESSION_LOST.search(stderr[: found.start()]):
        error_class = "killed"
    return {"error_class": error_class, "message": message}


class Gfal2Tpc(TransferTool):
    """Third-party copy of any of our protocols through `gfal-copy`; exit code and stderr decide.

    `name` is the protocol, as for the native tools; `client` tells the two apart.
    """

    client = "gfal2"

    def __init__(self, protocol: str, *, mode: Mode = "pull") -> None:
        if protocol not in URLS:
            raise ValueError(f"gfal2 drives {', '.join(URLS)}, not {protocol!r}")
        if mode not in ("pull", "push"):
            raise ValueError(f"mode must be pull or push, not {mode!r}")
        if mode != "pull" and protocol != "https":
            raise ValueError(f"push mode is for https only; {protocol} TPC has no pull/push choice")
        if not gfal_copy_available():
            raise UserError(
                f"{GFAL_COPY} is not installed; install Debian's gfal2-util-scripts, "
                "python3-gfal2-util and gfal2-plugin-http|xrootd|gridftp "
                "(scripts/install-system-deps.sh)"
            )
        self.name = protocol
        self.mode = mode
        # Per protocol: gfal2 passes tokens for https and root://; GridFTP has none.
        tokens = protocol in TOKEN_PROTOCOLS
        self.auths: tuple[str, ...] = ("x509", "token") if tokens else ("x509",)
        if protocol == "root":
            # XrdCl 5.5's copy job asks the digests without the URL's token, which the token
            # area refuses ([3010] Unable to checksum ...; permission denied).
            self.checksum_auths = ("x509",)
            self.checksum_refusal = (
                "XrdCl 5.5 asks for the digests without the URL's token, which the server refuses"
            )

    async def copy(self, request: TransferRequest) -> TransferRecord:
        to_url = URLS[self.name]
        source_url, destination_url = (
            to_url(request.src, request.src_path),
            to_url(request.dst, request.dst_path),
        )
        # gfal-copy says nothing before its first progress line: its start-up, stats,
        # connections and the COPY request are one setup phase ("request").
        seen = TransferObservation.begin(request, self.name, source_url, destination_url)
        seen.timeline.enter("request", seen.start)
        events = Gfal2Events(seen)

        if self.name == "root" and request.streams > MAX_ROOT_STREAMS:
            message = f"root:// TPC takes at most {MAX_ROOT_STREAMS} streams, not {request.streams}"
            return seen.record(False, error_class="remote-failure", message=message)

        if request.auth not in self.auths:
            message = f"gfal2 cannot pass {request.auth} authorization over {self.name}"
            return seen.record(False, error_class="auth", message=message)
        urls = (source_url, destination_url)
        env = gfal_environment(
            self.name,
            request.creds,
            request.streams,
            request.src,
            request.dst,
            request.auth,
            request.checksum,
        )
        if request.auth == "token":
            try:
                tokens = endpoint_tokens(request, self.name)
            except TokenError as exc:  # no token issuer, or its key could not be read
                return seen.record(False, error_class="auth", message=f"tokens: {exc}")
            if self.name == "root":
                urls = (with_authz(source_url, tokens[0]), with_authz(destination_url, tokens[1]))
            else:
                env.update(bearer_copy_environment(dict(zip(urls, tokens, strict=True))))
        argv = gfal_copy_argv(
            self.name,
            *urls,
            request.streams,
            mode=self.mode,
            timeout=request.timeout,
            checksum=request.checksum,
        )
        if request.auth == "token" and self.name == "https":
            argv = bearer_copy_argv(argv, GFAL_PYTHON)
        result = await run_process(
            argv,
            env=env,
            timeout=request.timeout,
            on_stdout_line=events.stdout_line,
            on_stderr_line=events.stderr_line,
        )
        outcome = gfal_outcome(
            result.returncode,
            result.timed_out,
            redact(result.stderr),
            request.timeout,
            copy_done=events.copy_done,
        )
        return seen.record(outcome["error_class"] is None, **outcome)

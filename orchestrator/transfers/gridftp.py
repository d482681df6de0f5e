"""GridFTP third-party copy: `globus-url-copy` between two gsiftp:// URLs, as a subprocess.

Options (why each: docs/measurements.md): `-p S` parallel streams; `-fast` MODE E with
data-channel reuse, what any GridFTP expert uses; `-nodcau` as FTS/gfal2 run production
GridFTP TPC by default; no `-tcp-bs`, so the kernel autotunes buffers as it does for XRootD.
`-dbg` prints the control channels' transcript, which times the phases (gridftp_transcript).

With `checksum="adler32"`: `-verify-checksum -checksum-alg ADLER32`, globus-url-copy's own
check. It asks the source's digest by `CKSM` before the copy and the destination's after
it (a new session), as gfal2's "both" mode, and so FTS, does; both parts are the
`checksum` phase. GridFTP servers compute the digest by reading the file at each CKSM.
A mismatch ends it with `error: [globus_l_gass_copy_verify_cksm]: checksum verification
failure for '<destination>': got '<dst>', expected '<src>'` (exit 1).
"""

from __future__ import annotations

import os
import re

from orchestrator.endpoints import ClientCredentials
from orchestrator.transfers.base import TransferObservation, TransferRequest, TransferTool
from orchestrator.transfers.checksums import Checksum
from orchestrator.transfers.error_classes import outcome_of
from orchestrator.transfers.gridftp_transcript import GridftpTranscript, without_transcript
from orchestrator.transfers.process import run_process
from orchestrator.transfers.record import TransferRecord
from orchestrator.transfers.urls import gsiftp_url

# `-vb` prints e.g. "    8388608 bytes        8.00 MB/sec avg        8.00 MB/sec inst".
_VB_PROGRESS = re.compile(r"^\s*(\d+) bytes\s+[\d.]+ \S+ avg")
# Its algorithm names for ours.
_ALGORITHMS: dict[Checksum, str] = {"adler32": "ADLER32"}


def credential_env(creds: ClientCredentials) -> dict[str, str]:
    """The environment a Globus (or XRootD) client needs to present our client certificate."""
    env = {k: v for k, v in os.environ.items() if k != "X509_USER_PROXY"}
    env.update(
        X509_USER_CERT=str(creds.cert),
        X509_USER_KEY=str(creds.key),
        X509_CERT_DIR=str(creds.certdir),
    )
    return env


def globus_url_copy_argv(
    request: TransferRequest,
    *,
    dcau: bool = False,
    tcp_buffer: str | None = None,
    progress: bool = True,
    transcript: bool = True,
) -> list[str]:
    """The exact command line; the fidelity bench runs the same one bare."""
    src, dst = request.src, request.dst
    argv = ["globus-url-copy", "-fast", "-p", str(request.streams)]
    if progress:
        argv.append("-vb")
    if transcript:
        argv.append("-dbg")
    if not dcau:
        argv.append("-nodcau")
    if request.checksum != "none":
        argv += ["-verify-checksum", "-checksum-alg", _ALGORITHMS[request.checksum]]
    if tcp_buffer is not None:
        argv += ["-tcp-bs", tcp_buffer]
    # The servers' expected subjects, when known: host certs need not name the address.
    if src.host_dn:
        argv += ["-ss", src.host_dn]
    if dst.host_dn:
        argv += ["-ds", dst.host_dn]
    return [*argv, gsiftp_url(src, request.src_path), gsiftp_url(dst, request.dst_path)]


class GridFtpTpc(TransferTool):
    """`globus-url-copy` from source to destination server; exit code and stderr decide."""

    name = "gridftp"
    auths: tuple[str, ...] = ("x509",)  # the client certificate (or its proxy) only

    def __init__(self, *, dcau: bool = False, tcp_buffer: str | None = None) -> None:
        self.dcau = dcau
        self.tcp_buffer = tcp_buffer

    async def copy(self, request: TransferRequest) -> TransferRecord:
        argv = globus_url_copy_argv(request, dcau=self.dcau, tcp_buffer=self.tcp_buffer)
        seen = TransferObservation.begin(request, self.name, argv[-2], argv[-1])

        def on_line(line: str) -> None:
            match = _VB_PROGRESS.match(line)
            if match is not None:
                seen.progressed(int(match.group(1)))

        result = await run_process(
            argv,
            env=credential_env(request.creds),
            timeout=request.timeout,
            on_stdout_line=on_line,
            on_stderr_line=GridftpTranscript(seen.timeline, request.clock).feed,
        )
        outcome = globus_url_copy_outcome(
            result.returncode, result.timed_out, result.stderr, request.timeout
        )
        return seen.record(outcome["error_class"] is None, **outcome)


def globus_url_copy_outcome(
    returncode: int | None, timed_out: bool, stderr: str, timeout: float
) -> dict[str, str | None]:
    """Error class (None: success) and message from the exit and what the tool said besides
        its transcript (its checksum verification failure is a `checksum-mismatch`, as
    error_classes words it)."""
    verdict = without_transcript(stderr)
    return outcome_of(returncode, timed_out, verdict, timeout)

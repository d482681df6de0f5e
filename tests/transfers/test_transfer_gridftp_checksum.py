"""globus-url-copy's checksum step without servers: its options, its transcript, its verdicts.

The transcript and the messages are what globus-url-copy 10.12 printed against a lab of
globus-gridftp-server 13.24 (abbreviated: SITE HELP, FEAT and the like left out); a scripted
clock stands in for the moments the lines arrived.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.error_classes import classify_message
from orchestrator.transfers.gridftp import globus_url_copy_argv, globus_url_copy_outcome
from orchestrator.transfers.gridftp_transcript import GridftpTranscript
from orchestrator.transfers.phases import PhaseTimeline
from orchestrator.transfers.record import Clock

CREDS = ClientCredentials(Path("/pki/user.pem"), Path("/pki/user.key"), Path("/pki/ca"))
LAB_1 = Endpoint("lab-1", "10.99.231.2", data_root="/dev/shm/lab-1", host_dn="/CN=lab-1")
LAB_2 = Endpoint("lab-2", "10.99.232.2", data_root="/dev/shm/lab-2", host_dn="/CN=lab-2")
SRC = "gsiftp://10.99.231.2:2811/dev/shm/lab-1/tpcbench-source-16777216"
DST = "gsiftp://10.99.232.2:2811/dev/shm/lab-2/tpcbench-gridftp-0"


class ScriptedClock(Clock):
    """`now()` is whatever the test set last."""

    def __init__(self) -> None:
        super().__init__()
        self.at = 0.0

    def now(self) -> float:
        return self.at


def request(checksum: str) -> TransferRequest:
    return TransferRequest(
        LAB_1, LAB_2, "/tpcbench-source-16777216", "/tpcbench-gridftp-0", 4, CREDS,
        checksum=checksum,  # type: ignore[arg-type]
    )  # fmt: skip


def test_without_checksum_the_command_line_is_todays() -> None:
    assert globus_url_copy_argv(request("none")) == [
        "globus-url-copy", "-fast", "-p", "4", "-vb", "-dbg", "-nodcau",
        "-ss", "/CN=lab-1", "-ds", "/CN=lab-2", SRC, DST,
    ]  # fmt: skip


def test_adler32_asks_globus_url_copy_to_verify_the_copy() -> None:
    argv = globus_url_copy_argv(request("adler32"))
    assert argv[argv.index("-verify-checksum") + 1 :][:2] == ["-checksum-alg", "ADLER32"]
    plain = globus_url_copy_argv(request("none"))
    assert [a for a in argv if a not in ("-verify-checksum", "-checksum-alg", "ADLER32")] == plain


# A real run at 16 MiB: the source's CKSM on the session that then sizes and copies the file,
# the copy, then a new session to the destination for its CKSM.
VERIFIED = f"""
0.0088 debug: starting ADLER32 cksm {SRC}, offset: 0 length: -1
0.0088 debug: connecting to {SRC}
0.0195 debug: response from {SRC}:
0.0195 220 lab-1 GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.
0.0195 debug: authenticating with {SRC}
0.1055 debug: response from {SRC}:
0.1055 230 User tpcbench logged in.
0.1064 debug: sending command to {SRC}:
0.1064 MODE E
0.1064 debug: response from {SRC}:
0.1064 200 Mode set to E.
0.1064 debug: sending command to {SRC}:
0.1064 CKSM ADLER32 0 -1 /dev/shm/lab-1/tpcbench-source-16777216
0.1146 debug: response from {SRC}:
0.1146 213 c7219f13
0.1146 debug: operation complete
0.1147 debug: starting to size {SRC}
0.1147 debug: sending command to {SRC}:
0.1147 SIZE /dev/shm/lab-1/tpcbench-source-16777216
0.1149 debug: response from {SRC}:
0.1149 213 16777216
0.1149 debug: operation complete
0.1150 debug: starting to transfer {SRC} to {DST}
0.1150 debug: connecting to {DST}
0.1226 debug: response from {DST}:
0.1227 220 lab-2 GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.
0.1227 debug: authenticating with {DST}
0.2651 debug: response from {DST}:
0.2651 230 User tpcbench logged in.
0.2670 debug: sending command to {DST}:
0.2670 STOR /dev/shm/lab-2/tpcbench-gridftp-0
0.2675 debug: sending command to {SRC}:
0.2675 RETR /dev/shm/lab-1/tpcbench-source-16777216
0.2692 debug: response from {SRC}:
0.2692 150 Beginning transfer.
0.2718 debug: response from {DST}:
0.2718 150 Beginning transfer.
0.2884 debug: response from {SRC}:
0.2884 226 Transfer Complete.
0.2941 debug: response from {DST}:
0.2941 226 Transfer Complete.
0.2942 debug: operation complete
0.2942 debug: starting ADLER32 cksm {DST}, offset: 0 length: -1
0.2942 debug: connecting to {DST}
0.3032 debug: response from {DST}:
0.3032 220 lab-2 GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.
0.3032 debug: authenticating with {DST}
0.4906 debug: response from {DST}:
0.4906 230 User tpcbench logged in.
0.4915 debug: sending command to {DST}:
0.4915 CKSM ADLER32 0 -1 /dev/shm/lab-2/tpcbench-gridftp-0
0.5032 debug: response from {DST}:
0.5032 213 c7219f13
0.5032 debug: operation complete
"""


def test_the_transcript_times_both_digests_as_the_checksum_phase() -> None:
    clock, timeline = ScriptedClock(), PhaseTimeline(start=0.0)
    transcript = GridftpTranscript(timeline, clock)
    for entry in VERIFIED.strip("\n").splitlines():
        moment, _, line = entry.partition(" ")
        clock.at = float(moment)
        transcript.feed(line)
    phases = timeline.durations(end=0.5033)
    assert phases == {
        "connect": pytest.approx(0.0195 + (0.1227 - 0.1150)),
        "handshake": pytest.approx((0.1055 - 0.0195) + (0.2651 - 0.1227)),
        # the source's setup commands, then SIZE, then the destination's up to the data
        "request": pytest.approx((0.1064 - 0.1055) + (0.1150 - 0.1146) + (0.2692 - 0.2651)),
        # the source's CKSM round trip, and the destination's whole session for its CKSM
        "checksum": pytest.approx((0.1146 - 0.1064) + (0.5032 - 0.2942)),
        "streaming": pytest.approx(0.2942 - 0.2692),
        "close": pytest.approx(0.5033 - 0.5032),
    }
    assert list(phases) == ["connect", "handshake", "request", "checksum", "streaming", "close"]
    assert sum(phases.values()) == pytest.approx(0.5033)


# What globus-url-copy said when the destination held other bytes than it was sent (a copy
# to /dev/null: its digest is the empty file's), exit code 1.
def untimed(script: str) -> str:
    return "\n".join(entry.partition(" ")[2] for entry in script.strip().splitlines())


MISMATCH = (
    untimed("00000001".join(VERIFIED.rsplit("c7219f13", 1)))  # the destination's digest
    + "\nerror: [globus_l_gass_copy_verify_cksm]: checksum verification failure for "
    "'gsiftp://10.99.232.2:2811/dev/shm/lab-2/../../../null':\n"
    "\tgot '00000001',\n"
    "\texpected 'c7219f13'\n"
)
# The destination's server could not read what it had written (a write-only file).
REFUSED = """debug: sending command to gsiftp://10.99.232.2:2811/dev/shm/lab-2/tpcbench-ck-wo:
CKSM ADLER32 0 -1 /dev/shm/lab-2/tpcbench-ck-wo

debug: response from gsiftp://10.99.232.2:2811/dev/shm/lab-2/tpcbench-ck-wo:
500-globus_xio_register_open failed.
500-globus_xio: Unable to open file /dev/shm/lab-2/tpcbench-ck-wo
500-globus_xio: System error in open: Permission denied
500-globus_xio: A system call failed: Permission denied
500 End.

debug: operation complete

error: globus_ftp_client: the server responded with an error
500 500-globus_xio_register_open failed.
500-globus_xio: Unable to open file /dev/shm/lab-2/tpcbench-ck-wo
500-globus_xio: System error in open: Permission denied
500-globus_xio: A system call failed: Permission denied
500 End.
"""


def test_a_verification_failure_is_a_checksum_mismatch_with_both_digests() -> None:
    outcome = globus_url_copy_outcome(1, False, MISMATCH, 600)
    assert outcome["error_class"] == "checksum-mismatch"
    message = outcome["message"] or ""
    assert message.startswith("error: [globus_l_gass_copy_verify_cksm]: checksum verification")
    assert "got '00000001'" in message and "expected 'c7219f13'" in message
    assert "debug:" not in message and "CKSM" not in message  # the transcript is left out


def test_a_refused_digest_is_classified_like_any_refusal() -> None:
    outcome = globus_url_copy_outcome(1, False, REFUSED, 600)
    assert outcome["error_class"] == "auth" == classify_message("Permission denied")
    assert (outcome["message"] or "").startswith("error: globus_ftp_client: the server")


def test_success_and_timeouts_are_unchanged() -> None:
    assert globus_url_copy_outcome(0, False, untimed(VERIFIED), 600) == {
        "error_class": None,
        "message": "",
    }
    assert globus_url_copy_outcome(None, True, "", 30)["error_class"] == "timeout"

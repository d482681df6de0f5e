"""gfal2's checksum step without servers: its options, its events and its verdicts.

The lines and messages are what gfal-copy 1.8.0 (gfal2 2.21.3, XrdCl 5.5.3) printed against
the lab's servers; a scripted clock stands in for the moments they arrived. The gsiftp
mismatch message was captured once by hand (a source changed between gfal2's source checksum
and the copy): the lab test has no deterministic way to make it (test_transfer_checksum_tools).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.base import TransferObservation, TransferRequest
from orchestrator.transfers.gfal2 import gfal_copy_argv, gfal_environment, gfal_outcome
from orchestrator.transfers.gfal2_events import Gfal2Events
from orchestrator.transfers.gfal2_tokens import bearer_copy_argv
from orchestrator.transfers.record import Clock

CREDS = ClientCredentials(Path("/pki/user.pem"), Path("/pki/user.key"), Path("/pki/ca"))
A = Endpoint("a", "10.99.1.2", host_dn="/CN=a")
B = Endpoint("b", "10.99.2.2", host_dn="/CN=b")
URLS = {
    "https": ("https://a:8443/s", "https://b:8443/d"),
    "root": ("root://a:1094//s", "root://b:1094//d"),
    "gridftp": ("gsiftp://a:2811/data/s", "gsiftp://b:2811/data/d"),
}


class ScriptedClock(Clock):
    """`now()` is whatever the test set last."""

    def __init__(self) -> None:
        super().__init__()
        self.at = 0.0

    def now(self) -> float:
        return self.at


@pytest.mark.parametrize("protocol", sorted(URLS))
def test_adler32_adds_gfal2s_own_check_and_none_changes_nothing(protocol: str) -> None:
    today = gfal_copy_argv(protocol, *URLS[protocol], 4, timeout=90)
    assert "-K" not in today and "--checksum-mode" not in today
    assert gfal_copy_argv(protocol, *URLS[protocol], 4, timeout=90, checksum="none") == today
    checked = gfal_copy_argv(protocol, *URLS[protocol], 4, timeout=90, checksum="adler32")
    assert checked == [*today[:-2], "-K", "ADLER32", "--checksum-mode", "both", *today[-2:]]
    # the token driver runs gfal-copy's own command with the same options
    assert bearer_copy_argv(checked, "/usr/bin/python3")[-8:] == checked[-8:]


def test_root_logs_at_xrdcls_debug_level_only_with_a_checksum() -> None:
    assert gfal_environment("root", CREDS, 2, A, B)["XRD_LOGLEVEL"] == "Error"
    checked = gfal_environment("root", CREDS, 2, A, B, checksum="adler32")
    assert checked["XRD_LOGLEVEL"] == "Debug"  # "Attempting checksum calculation."
    assert "XRD_LOGLEVEL" not in gfal_environment("https", CREDS, 2, A, B, checksum="adler32")


def observe(script: str) -> tuple[TransferObservation, Gfal2Events]:
    """Lines as `<seconds> <O|E> <line>` (stdout or stderr), fed as the tool feeds them."""
    clock = ScriptedClock()
    request = TransferRequest(A, B, "/s", "/d", 2, CREDS, clock=clock, checksum="adler32")
    seen = TransferObservation.begin(request, "https", "s", "d")
    seen.timeline.enter("request", seen.start)
    events = Gfal2Events(seen)
    for entry in script.strip("\n").splitlines():
        moment, stream, line = entry.split(" ", 2)
        clock.at = float(moment)
        (events.stdout_line if stream == "O" else events.stderr_line)(line)
    return seen, events


HTTPS = """
0.2597 O event: [1795591473962] SOURCE http_plugin\tCHECKSUM:ENTER
0.3215 O event: [1795591474023] SOURCE http_plugin\tCHECKSUM:EXIT
0.3729 O event: [1795591474075] BOTH   http_plugin\tPREPARE:EXIT\thttps://a:8443/s => https://b:8443/d
0.3730 O event: [1795591474075] BOTH   http_plugin\tTRANSFER:ENTER\thttps://a:8443/s => https://b:8443/d
0.3730 O event: [1795591474075] BOTH   http_plugin\tTRANSFER:TYPE\t3rd pull
0.7752 O event: [1795591480568] BOTH   http_plugin\tTRANSFER:EXIT\thttps://a:8443/s => https://b:8443/d
0.7753 O event: [1795591480568] DEST   http_plugin\tCHECKSUM:ENTER
0.8381 O event: [1795591480631] DEST   http_plugin\tCHECKSUM:EXIT
"""


def test_https_and_gsiftp_time_the_source_before_and_the_destination_after_the_copy() -> None:
    seen, events = observe(HTTPS)
    assert events.copy_done
    phases = seen.timeline.durations(end=0.8548)
    assert phases == {
        "connect": 0.0,
        "request": pytest.approx(0.2597 + (0.7752 - 0.3215)),
        "checksum": pytest.approx((0.3215 - 0.2597) + (0.8381 - 0.7753)),
        "close": pytest.approx((0.7753 - 0.7752) + (0.8548 - 0.8381)),
    }
    assert sum(phases.values()) == pytest.approx(0.8548)


ROOT = """
0.3995 O event: [1795591543195] BOTH   xroot\tTRANSFER:ENTER\troot://a:1094///s => root://b:1094///d
0.3996 O event: [1795591543195] BOTH   xroot\tTRANSFER:TYPE\t3rd pull
0.4000 E [2026-11-25 07:25:43.195814 +0000][Debug  ][AsyncSock         ] [a:1094.0] Attempting connection to [::ffff:10.99.1.2]:1094
3.3804 O monitor: root://a:1094///s root://b:1094///d 5592405 5592405 16777216 3
3.3811 E [2026-11-25 07:25:46.176872 +0000][Debug  ][Utility           ] Attempting checksum calculation.
3.4252 E [2026-11-25 07:25:46.221034 +0000][Info   ][Utility           ] Checksum verification: succeeded.
3.4254 O event: [1795591546221] BOTH   xroot\tTRANSFER:EXIT\tJob finished, [SUCCESS]
"""  # noqa: E501


def test_root_times_xrdcls_checksum_step_after_the_copy() -> None:
    seen, _ = observe(ROOT)
    phases = seen.timeline.durations(end=3.4365)
    assert phases == {
        "connect": 0.0,
        "request": pytest.approx(3.3804),
        "streaming": pytest.approx(3.3811 - 3.3804),
        "checksum": pytest.approx(3.4254 - 3.3811),
        "close": pytest.approx(3.4365 - 3.4254),
    }
    assert [p.bytes for p in seen.progress] == [16777216]


def test_a_progress_line_read_after_xrdcls_checksum_began_does_not_reopen_the_copy() -> None:
    # stdout and stderr are two pipes: the last progress line may be read second
    late = ROOT.replace("3.3804 O monitor", "3.3812 O monitor")
    lines = late.strip("\n").splitlines()
    lines[3], lines[4] = lines[4], lines[3]
    seen, _ = observe("\n".join(lines))
    phases = seen.timeline.durations(end=3.4365)
    assert "streaming" not in phases and phases["checksum"] == pytest.approx(3.4254 - 3.3811)
    assert [p.bytes for p in seen.progress] == [16777216]  # the progress still counts


@pytest.mark.parametrize(
    ("stderr", "error_class"),
    [
        # https: the source's stored digest was another file's
        (
            "gfal-copy error: 5 (Input/output error) - DESTINATION CHECKSUM MISMATCH Source and "
            "destination ADLER32 do not match (0badc0de != c7219f13)\n",
            "checksum-mismatch",
        ),
        # gsiftp: the source changed after gfal2 asked its digest
        (
            "gfal-copy error: 5 (Input/output error) - TRANSFER CHECKSUM MISMATCH SRC and DST "
            "checksum are different. Source: c7219f13 Destination: 42ca9ef0\n",
            "checksum-mismatch",
        ),
        # root://: XrdCl's copy job compared them (errCheckSumError), its debug log goes on
        (
            "gfal-copy error: 84 (Invalid or incomplete multibyte or wide character) - Error on "
            "XrdCl::CopyProcess::Run(): [ERROR] CheckSum error\n"
            "[2026-11-25 07:27:41.709271 +0000][Debug  ][JobMgr            ] Stopping the job "
            "manager...\n",
            "checksum-mismatch",
        ),
        # root:// with tokens: XrdCl 5.5's copy job asks the digest without the URL's token
        (
            "gfal-copy error: 13 (Permission denied) - Error on XrdCl::CopyProcess::Run(): "
            "[ERROR] Server responded with an error: [3010] Unable to checksum "
            "/tokens/tpcbench-source-16777216; permission denied\\x00 Got an error while "
            "querying the checksum! (source)\n",
            "auth",
        ),
    ],
)
def test_checksum_failures_are_classified(stderr: str, error_class: str) -> None:
    code = int(stderr.split("gfal-copy error: ")[1].split()[0])
    outcome = gfal_outcome(code, False, stderr, 600, copy_done=True)
    assert outcome["error_class"] == error_class
    message = outcome["message"] or ""
    assert message.startswith("gfal-copy error: ") and "[Debug" not in message

"""Phases from synthetic timestamps: the shared timeline, the record's figures, each reader.

The transcripts are abbreviated from real lab runs (globus-url-copy 10.12 -dbg, xrdcp
5.5.3 -d 2); a scripted clock stands in for the moments the lines arrived.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from orchestrator.transfers.error_classes import classify_message
from orchestrator.transfers.gridftp_transcript import GridftpTranscript, without_transcript
from orchestrator.transfers.https import phase_trace
from orchestrator.transfers.phases import PhaseTimeline
from orchestrator.transfers.record import Clock, ProgressPoint, TransferRecord
from orchestrator.transfers.xrdcl_log import XrdclLog


class ScriptedClock(Clock):
    """`now()` is whatever the test set last."""

    def __init__(self) -> None:
        super().__init__()
        self.at = 0.0

    def now(self) -> float:
        return self.at


def feed(reader: GridftpTranscript | XrdclLog, clock: ScriptedClock, script: str) -> None:
    """Lines as `<seconds> <line>`: the line arrives at that moment."""
    for entry in script.strip("\n").splitlines():
        moment, _, line = entry.strip().partition(" ")
        clock.at = float(moment)
        reader.feed(line)


def approx(phases: dict[str, float]) -> dict[str, float]:
    return {name: pytest.approx(seconds) for name, seconds in phases.items()}


def record(phases: dict[str, float], first: ProgressPoint | None, moved: int) -> TransferRecord:
    now = datetime.now(UTC)
    return TransferRecord(
        index=0,
        protocol="https",
        source_url="https://a/x",
        destination_url="https://b/y",
        start=0.0,
        end=sum(phases.values()),
        started=now,
        ended=now,
        bytes=moved,
        outcome="success",
        phases=phases,
        first_progress=first,
    )


def test_phases_are_consecutive_and_add_up_to_the_duration_exactly() -> None:
    timeline = PhaseTimeline(start=10.0)
    timeline.enter("handshake", 10.1)
    timeline.enter("handshake", 10.15)  # already in it: no new phase
    timeline.enter("request", 10.3)
    timeline.begin_streaming(10.6, moved=0)
    timeline.enter("close", 12.6)
    phases = timeline.durations(end=12.7)
    assert list(phases) == ["connect", "handshake", "request", "streaming", "close"]
    assert phases == approx(
        {"connect": 0.1, "handshake": 0.2, "request": 0.3, "streaming": 2.0, "close": 0.1}
    )
    assert sum(phases.values()) == pytest.approx(2.7)
    assert timeline.first_progress == ProgressPoint(pytest.approx(0.6), 0)


def test_a_phase_met_twice_is_summed_in_its_first_place() -> None:
    timeline = PhaseTimeline(start=0.0)  # GridFTP: one server, then the other
    for phase, at in [("handshake", 1), ("request", 3), ("connect", 4), ("handshake", 5)]:
        timeline.enter(phase, at)
    timeline.enter("request", 6)
    timeline.begin_streaming(7)
    assert timeline.durations(end=10.0) == approx(
        {"connect": 2.0, "handshake": 3.0, "request": 2.0, "streaming": 3.0}
    )


def test_a_failed_transfer_has_the_phases_it_reached() -> None:
    timeline = PhaseTimeline(start=0.0)
    timeline.enter("handshake", 0.5)
    assert timeline.durations(end=0.75) == approx({"connect": 0.5, "handshake": 0.25})
    assert timeline.first_progress is None


def test_crossed_or_late_stamps_never_make_a_phase_negative() -> None:
    timeline = PhaseTimeline(start=0.0)
    timeline.enter("request", 2.0)
    timeline.enter("handshake", 1.5)  # stamped before the phase it ends began
    timeline.begin_streaming(2.5, moved=100)
    timeline.begin_streaming(2.8, moved=900)  # only the first progress counts
    timeline.enter("close", 9.0)  # read after the process ended
    phases = timeline.durations(end=4.0)
    assert all(seconds >= 0 for seconds in phases.values())
    assert sum(phases.values()) == pytest.approx(4.0)
    assert phases["handshake"] == pytest.approx(0.5)
    assert timeline.first_progress == ProgressPoint(pytest.approx(2.5), 100)


def test_unknown_phase_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown phase 'tls'"):
        PhaseTimeline(start=0.0).enter("tls", 1.0)


def test_setup_and_streaming_rate_come_from_the_first_progress() -> None:
    phases = {"connect": 0.01, "handshake": 0.02, "request": 0.07, "streaming": 0.4, "close": 0.0}
    done = record(phases, ProgressPoint(0.1, 2**20), moved=51 * 2**20)
    assert done.setup_s == pytest.approx(0.1)
    assert done.streaming_gbps == pytest.approx(50 * 2**20 * 8 / 0.4 / 1e9)
    entry = done.to_json()
    assert entry["phases"] == phases
    assert entry["streaming_gbps"] == round(done.streaming_gbps, 6)
    assert entry["duration_s"] == pytest.approx(sum(entry["phases"].values()), abs=1e-5)


def test_no_progress_means_no_setup_and_no_streaming_rate() -> None:
    stuck = record({"connect": 0.2, "handshake": 3.0}, None, moved=0)
    assert stuck.setup_s is None
    assert stuck.streaming_gbps is None
    assert stuck.to_json()["streaming_gbps"] is None


def test_https_trace_events_stamp_connect_handshake_and_request() -> None:
    clock = ScriptedClock()
    timeline = PhaseTimeline(start=0.0)
    response_at: list[float] = []
    trace = phase_trace(timeline, clock, response_at)
    events = [
        (0.024, "connection.connect_tcp.started"),
        (0.025, "connection.connect_tcp.complete"),
        (0.0251, "connection.start_tls.started"),
        (0.0286, "connection.start_tls.complete"),
        (0.0288, "http11.send_request_headers.started"),
        (0.0365, "http11.receive_response_headers.started"),
        (0.0529, "http11.receive_response_headers.complete"),
    ]
    for moment, event in events:
        clock.at = moment
        asyncio.run(trace(event, {}))
    assert response_at == [0.0529]
    timeline.begin_streaming(response_at[-1])
    timeline.enter("close", 0.1214)
    assert timeline.durations(end=0.1232) == approx(
        {
            "connect": 0.0251,
            "handshake": 0.0037,
            "request": 0.0241,
            "streaming": 0.0685,
            "close": 0.0018,
        }
    )


SRC = "gsiftp://10.99.221.2:2811/dev/shm/lab-1/tpcbench-source-67108864"
DST = "gsiftp://10.99.222.2:2811/dev/shm/lab-2/explore-g-1"
GRIDFTP_SUCCESS = f"""
0.007 debug: starting to size {SRC}
0.007 debug: connecting to {SRC}
0.012 debug: response from {SRC}:
0.012 220 lab-1 GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.
0.0121 debug: authenticating with {SRC}
0.181 debug: response from {SRC}:
0.181 230 User tpcbench logged in.
0.1811 debug: sending command to {SRC}:
0.1811 SIZE /dev/shm/lab-1/tpcbench-source-67108864
0.1819 debug: response from {SRC}:
0.1819 213 67108864
0.1819 debug: operation complete
0.182 debug: starting to transfer {SRC} to {DST}
0.182 debug: connecting to {DST}
0.187 debug: response from {DST}:
0.187 220 lab-2 GridFTP Server 13.24 (gcc64, 1653033972-1) [Grid Community Toolkit 6.2] ready.
0.1871 debug: authenticating with {DST}
0.301 debug: response from {DST}:
0.301 230 User tpcbench logged in.
0.302 debug: sending command to {SRC}:
0.302 PORT 10,99,222,2,80,94
0.3057 debug: response from {SRC}:
0.3057 200 PORT Command successful.
0.3058 debug: response from {DST}:
0.3058 150 Beginning transfer.
0.3058 debug: response from {DST}:
0.3058 112-Perf Marker
0.3058  Stripe Bytes Transferred: 0
0.3058 112 End.
0.3248 debug: response from {SRC}:
0.3248 226 Transfer Complete.
0.3373 debug: response from {DST}:
0.3373 226 Transfer Complete.
0.3373 debug: operation complete
"""


def test_gridftp_transcript_times_both_servers_and_the_copy() -> None:
    clock, timeline = ScriptedClock(), PhaseTimeline(start=0.0)
    feed(GridftpTranscript(timeline, clock), clock, GRIDFTP_SUCCESS)
    assert timeline.durations(end=0.3374) == approx(
        {
            "connect": 0.0121 + (0.1871 - 0.182),
            "handshake": (0.181 - 0.0121) + (0.301 - 0.1871),
            "request": (0.182 - 0.181) + (0.3058 - 0.301),
            "streaming": 0.3373 - 0.3058,
            "close": 0.0001,
        }
    )
    assert timeline.first_progress == ProgressPoint(pytest.approx(0.3058), 0)


GRIDFTP_MISSING_SOURCE = f"""
debug: sending command to {SRC}:
RETR /dev/shm/lab-1/nope

debug: response from {SRC}:
500-Command failed. : globus_l_gfs_file_open failed.
500-globus_xio: System error in open: No such file or directory
500 End.

debug: fault on connection to {SRC}: globus_ftp_client: the server responded with an error
debug: operation complete

error: globus_ftp_client: the server responded with an error
500 500-Command failed. : globus_l_gfs_file_open failed.
500-globus_xio: System error in open: No such file or directory
500 End.
"""


def test_the_error_is_read_without_the_transcript() -> None:
    error = without_transcript(GRIDFTP_MISSING_SOURCE)
    assert error.startswith("error: globus_ftp_client: the server responded with an error")
    assert "RETR" not in error and "debug:" not in error
    assert error.count("No such file or directory") == 1
    assert classify_message(error) == "not-found"
    # A transcript the server's answers fill, with no error after it, says nothing.
    assert without_transcript(f"debug: response from {SRC}:\n530 Login incorrect.\n") == ""


def xrdcl(category: str, text: str) -> str:
    return f"[2026-11-23 21:32:48.989753 +0000][Debug  ][{category:<18}] {text}"


DST_OPEN = "kXR_open (file: /t-1?oss.asize=16777216&tpc.key=3b8d&tpc.src=x&tpc.stage=copy)"
SRC_OPEN = "kXR_open (file: /src?tpc.dst=[::ffff:10.99.222.2]&tpc.key=3b8d&tpc.stage=copy)"
XRDCL_SUCCESS = "\n".join(
    f"{moment} {xrdcl(category, text)}"
    for moment, category, text in [
        (0.0076, "PostMaster", "Creating new channel to: root://10.99.222.2:1094/"),
        (0.0087, "XRootDTransport", "[10.99.222.2:1094.0] Logged in, session: 0600"),
        (0.0091, "PostMaster", "Creating new channel to: root://10.99.221.2:1094/"),
        (0.0096, "XRootDTransport", "[10.99.221.2:1094.0] Logged in, session: 0800"),
        (0.0100, "ExDbgMsg", f"[x] Calling MsgHandler: 0x1 (message: {DST_OPEN} ) with status"),
        (0.0124, "ExDbgMsg", "[x] MsgHandler created: 0x2 (message: kXR_sync (handle: 0) )."),
        (0.0132, "ExDbgMsg", "[x] Calling MsgHandler: 0x2 (message: kXR_sync (handle: 0) )"),
        (0.0135, "ExDbgMsg", f"[x] Calling MsgHandler: 0x3 (message: {SRC_OPEN} ) with status"),
        (0.0137, "ExDbgMsg", "[x] MsgHandler created: 0x4 (message: kXR_sync (handle: 0) )."),
        (0.0656, "ExDbgMsg", "[x] Calling MsgHandler: 0x4 (message: kXR_sync (handle: 0) )"),
        (2.5140, "ExDbgMsg", "[x] MsgHandler created: 0x5 (message: kXR_stat (handle: 0) )."),
        (2.5170, "ExDbgMsg", "[x] MsgHandler created: 0x6 (message: kXR_close (handle: 0) )."),
    ]
)


def test_xrdcl_log_times_the_copy_and_the_poll_that_notices_its_end() -> None:
    clock, timeline = ScriptedClock(), PhaseTimeline(start=0.0)
    feed(XrdclLog(timeline, clock), clock, XRDCL_SUCCESS)
    assert timeline.durations(end=2.5201) == approx(
        {
            "connect": 0.0087 + (0.0096 - 0.0091),
            "request": (0.0091 - 0.0087) + (0.0137 - 0.0096),
            "streaming": 0.0656 - 0.0137,
            "poll": 2.5140 - 0.0656,
            "close": 2.5201 - 2.5140,
        }
    )


def test_xrdcl_log_counts_a_security_handshake_when_the_server_asks_for_one() -> None:
    clock, timeline = ScriptedClock(), PhaseTimeline(start=0.0)
    script = "\n".join(
        f"{moment} {xrdcl('XRootDTransport', text)}"
        for moment, text in [
            (0.001, "[dst:1094.0] Logged in, session: 0600"),
            (0.002, "[dst:1094.0] Authentication is required: &P=ztn,0:4096:"),
            (0.010, "[dst:1094.0] Authenticated with ztn."),
        ]
    )
    feed(XrdclLog(timeline, clock), clock, script)
    # the login's answer asked for authentication: the handshake began with it
    durations = timeline.durations(end=0.011)
    assert list(durations) == ["connect", "handshake", "request"]
    assert durations == approx({"connect": 0.001, "handshake": 0.009, "request": 0.001})


def test_a_redirect_turns_everything_since_the_first_request_into_one_redirect_phase() -> None:
    timeline = PhaseTimeline(start=0.0, first="authorize")  # x509: the macaroon first
    timeline.enter("connect", 0.2)  # the redirector
    timeline.enter("handshake", 0.3)
    timeline.enter("request", 0.4)
    timeline.redirected(1.4)  # its 307 (after its lookup): the data server is next
    timeline.enter("handshake", 1.5)
    timeline.enter("request", 1.6)
    timeline.redirected(1.9)  # a second hop adds to the same phase
    timeline.enter("request", 2.0)
    timeline.begin_streaming(2.1)
    phases = timeline.durations(end=3.0)
    assert list(phases) == ["authorize", "redirect", "connect", "request", "streaming"]
    assert phases == approx(
        {"authorize": 0.2, "redirect": 1.7, "connect": 0.1, "request": 0.1, "streaming": 0.9}
    )
    assert sum(phases.values()) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="after data began"):
        timeline.redirected(2.5)


def test_a_redirect_before_any_other_phase_starts_the_redirect_phase_at_the_start() -> None:
    timeline = PhaseTimeline(start=5.0)
    timeline.redirected(5.5)
    assert timeline.durations(end=6.0) == approx({"redirect": 0.5, "connect": 0.5})


def test_the_data_servers_and_redirects_are_in_the_json_only_when_learned() -> None:
    host_to_host = record({"connect": 0.1, "streaming": 1.0}, ProgressPoint(0.1, 0), 10)
    assert not {"source_server", "destination_server", "redirects"} & set(host_to_host.to_json())
    through_a_site = record({"redirect": 0.3, "streaming": 1.0}, ProgressPoint(0.3, 0), 10)
    through_a_site.destination_server, through_a_site.redirects = "10.99.3.2:1094", 1
    entry = through_a_site.to_json()
    assert (entry["destination_server"], entry["redirects"]) == ("10.99.3.2:1094", 1)
    assert "source_server" not in entry


# xrdcp 5.5.3 --tpc only to a site's manager (127.0.0.1:19802), which sent the destination's
# open on to its data server 127.0.0.1:19803 (lines and moments from a real run, shortened)
XRDCL_THROUGH_A_MANAGER = "\n".join(
    f"{moment} {xrdcl(category, text)}"
    for moment, category, text in [
        (0.000, "PostMaster", "Creating new channel to: root://127.0.0.1:19802/"),
        (0.001, "XRootDTransport", "[127.0.0.1:19802.0] Logged in, session: 0100"),
        (0.002, "ExDbgMsg", "[127.0.0.1:19802] MsgHandler created: 0xa1 (message: kXR_stat )."),
        (
            10.00,
            "ExDbgMsg",
            "[127.0.0.1:19802] Retry at server MsgHandler: 0xa1 (message: kXR_stat",
        ),
        (12.00, "ExDbgMsg", "[127.0.0.1:19802] MsgHandler created: 0xb2 (message: " + DST_OPEN),
        (
            12.01,
            "ExDbgMsg",
            "[127.0.0.1:19803] Retry at server MsgHandler: 0xb2 (message: " + DST_OPEN,
        ),
        (12.01, "PostMaster", "Creating new channel to: root://127.0.0.1:19803/?xrdcl.intent=tpc"),
        (12.02, "XRootDTransport", "[127.0.0.1:19803.0] Logged in, session: 0200"),
        (12.03, "ExDbgMsg", f"[127.0.0.1:19803] Calling MsgHandler: 0xb2 (message: {DST_OPEN} )"),
        (12.04, "ExDbgMsg", f"[127.0.0.1:19801] Calling MsgHandler: 0xc3 (message: {SRC_OPEN} )"),
        (12.05, "ExDbgMsg", "[127.0.0.1:19803] MsgHandler created: 0xd4 (message: kXR_sync )."),
        (12.10, "ExDbgMsg", "[127.0.0.1:19803] Calling MsgHandler: 0xd4 (message: kXR_sync )"),
    ]
)


def test_xrdcl_retried_at_another_host_is_a_redirect_to_the_data_server_of_that_end() -> None:
    clock, timeline = ScriptedClock(), PhaseTimeline(start=0.0)
    log = XrdclLog(timeline, clock, source="127.0.0.1:19801", destination="127.0.0.1:19802")
    feed(log, clock, XRDCL_THROUGH_A_MANAGER)
    assert (log.redirects, log.servers) == (1, {"destination": "127.0.0.1:19803"})
    phases = timeline.durations(end=12.2)
    # the manager's wait (its lookup of the new name) and its redirect: one phase
    assert phases["redirect"] == pytest.approx(12.01)
    assert list(phases)[:3] == ["redirect", "connect", "request"]
    assert phases["streaming"] == pytest.approx(0.05)

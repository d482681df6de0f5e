"""globus-url-copy's `-dbg` transcript: the phases of a GridFTP copy, and its error apart.

`-dbg` prints the client's side of both control channels on stderr, unbuffered:

    debug: connecting to gsiftp://src...
    debug: response from gsiftp://src...:
    220 lab-1 GridFTP Server 13.24 ... ready.
    debug: authenticating with gsiftp://src...
    debug: response from gsiftp://src...:
    230 User tpcbench logged in.
    (commands and replies, then the same for the destination, PASV/PORT, STOR/RETR)
    debug: response from gsiftp://dst...:
    150 Beginning transfer.
    ...
    debug: operation complete

After a failure the transcript ends and the tool's own `error: ...` lines follow.

With `-verify-checksum -checksum-alg ADLER32` (globus-url-copy 10.12, checked on a lab of
globus-gridftp-server 13.24) the transcript begins with `debug: starting ADLER32 cksm
<source>`: the source's digest is asked (`CKSM ADLER32 0 -1 <path>`, answered `213
<8 hex>`) on the session that then sizes and copies the file, so BEFORE the copy. After the
copy's `operation complete` comes `debug: starting ADLER32 cksm <destination>`: a new
session to the destination (connect, GSI, commands) sends the same CKSM; its `operation
complete` is followed by the comparison (a mismatch is the tool's `error:` line).
"""

from __future__ import annotations

from orchestrator.transfers.phases import PhaseTimeline
from orchestrator.transfers.record import Clock

_DEBUG = "debug: "


class GridftpTranscript:
    """Feed stderr lines as they arrive; stamps the phases on `timeline`.

    connect: "connecting to" a server (the process start too, for the first); handshake:
    "authenticating with" it (GSI, delegation, authorization) until its 230; request: the
    commands after; streaming: the first 150 (data flows) until the client's "operation
    complete" of the transfer; close: the process exit. Both servers go through connect,
    handshake and request, one after the other.

    checksum: the source's CKSM command until its reply (the server reads the whole file),
    then back to request; after the copy, from "starting ... cksm" of the destination (its
    new session included) until that operation completes, then close again. Both parts add
    up under "checksum"; the source's connect and handshake are not in it (the copy needs
    that session anyway).
    """

    def __init__(self, timeline: PhaseTimeline, clock: Clock) -> None:
        self.timeline = timeline
        self.clock = clock
        self._reply_follows = False
        self._command_follows = False
        self._transferring = False  # globus-url-copy sizes the source first (-vb)
        self._copied = False  # the transfer's own "operation complete" was seen
        self._verifying = False  # the destination's checksum, after the copy

    def feed(self, line: str) -> None:
        now = self.clock.now()
        if line.startswith(_DEBUG):
            self._event(line[len(_DEBUG) :], now)
            return
        if self._command_follows:
            self._command_follows = False
            if line.startswith("CKSM ") and not self._copied:
                self.timeline.enter("checksum", now)
            return
        if not self._reply_follows:
            return
        self._reply_follows = False  # only a reply's first line carries its code
        if self._verifying:
            return  # the destination's new session belongs to the checksum step
        if self.timeline.current == "checksum":
            self.timeline.enter("request", now)  # the source's digest is in
            return
        code = line[:3]
        if code == "230":
            self.timeline.enter("request", now)
        elif code == "150" and self._transferring:
            self.timeline.begin_streaming(now)

    def _event(self, event: str, now: float) -> None:
        self._reply_follows = event.startswith("response from ")
        self._command_follows = event.startswith("sending command to ")
        if self._verifying:
            if event.strip() == "operation complete":
                self._verifying = False
                self.timeline.enter("close", now)  # the digests are in: compare and exit
        elif event.startswith("starting ") and " cksm " in event and self._copied:
            self._verifying = True
            self.timeline.enter("checksum", now)
        elif event.startswith("connecting to "):
            self.timeline.enter("connect", now)
        elif event.startswith("authenticating with "):
            self.timeline.enter("handshake", now)
        elif event.startswith("starting to transfer "):
            self._transferring = True
        elif event.strip() == "operation complete" and self._transferring and not self._copied:
            self._copied = True
            self.timeline.enter("close", now)


def without_transcript(stderr: str) -> str:
    """What globus-url-copy said besides its `-dbg` transcript: the error, if any.

    A transcript entry is a `debug:` line and the command or reply lines under it, up to a
    blank line; the tool's `error:` lines always stand on their own.
    """
    kept: list[str] = []
    in_entry = False
    for line in stderr.splitlines():
        if line.startswith(_DEBUG):
            in_entry = True
        elif line.startswith("error:") or not line.strip():
            in_entry = False
        if not in_entry:
            kept.append(line)
    return "\n".join(kept).strip()

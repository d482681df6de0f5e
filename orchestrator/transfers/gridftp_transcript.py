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
    """

    def __init__(self, timeline: PhaseTimeline, clock: Clock) -> None:
        self.timeline = timeline
        self.clock = clock
        self._reply_follows = False
        self._transferring = False  # globus-url-copy sizes the source first (-vb)

    def feed(self, line: str) -> None:
        now = self.clock.now()
        if line.startswith(_DEBUG):
            event = line[len(_DEBUG) :]
            self._reply_follows = event.startswith("response from ")
            if event.startswith("connecting to "):
                self.timeline.enter("connect", now)
            elif event.startswith("authenticating with "):
                self.timeline.enter("handshake", now)
            elif event.startswith("starting to transfer "):
                self._transferring = True
            elif event.strip() == "operation complete" and self._transferring:
                self.timeline.enter("close", now)
            return
        if not self._reply_follows:
            return
        self._reply_follows = False  # only a reply's first line carries its code
        code = line[:3]
        if code == "230":
            self.timeline.enter("request", now)
        elif code == "150" and self._transferring:
            self.timeline.begin_streaming(now)


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

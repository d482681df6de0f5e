"""xrdcp's XrdCl debug log (`-d 2`, on stderr as it happens): the phases of a root:// TPC.

XrdCl 5.5 (XrdClThirdPartyCopyJob) logs each connection and each request, e.g.:

    [...][PostMaster        ] Creating new channel to: root://dst:1094/
    [...][XRootDTransport   ] [dst:1094.0] Logged in, session: 0400...
    [...][ExDbgMsg          ] [src:1094] Calling MsgHandler: 0x.. (message: kXR_open
        (file: /name?tpc.dst=...&tpc.key=...&tpc.stage=copy, ...) ) with status: [SUCCESS] .
    [...][ExDbgMsg          ] [dst:1094] MsgHandler created: 0x.. (message: kXR_sync ...).
    [...][ExDbgMsg          ] [dst:1094] Calling MsgHandler: 0x.. (message: kXR_sync ...)
        with status: [SUCCESS] .
    [...][ExDbgMsg          ] [dst:1094] MsgHandler created: 0x.. (message: kXR_stat ...).

It stats and opens both ends, has the destination meet the source (a first kXR_sync),
opens the source for the copy, then sends the kXR_sync that the destination answers when
the copy is over. xrdcp looks for that answer only every 2.5 s (XrdSysTimer::Wait(2500)
in 5.5.3), so a copy's end is noticed up to 2.5 s late: the `poll` phase.

Through a redirector (a site's manager), a request is sent on to a data server: the same
message handler is retried at another host (seen with xrdcp 5.5.3 and a manager):

    [...][ExDbgMsg          ] [mgr:1094] MsgHandler created: 0xfc736230 (message: kXR_open ...
    [...][ExDbgMsg          ] [ds1:1094] Retry at server MsgHandler: 0xfc736230 (message: ...

All before it is the `redirect` phase, and the data server serves the end the redirector
stood for. (A retry at the same host is the redirector's "wait": its lookup goes on.)
"""

from __future__ import annotations

import re

from orchestrator.transfers.phases import PhaseTimeline
from orchestrator.transfers.record import Clock

# "[host:port] MsgHandler created: 0x.." or "[host:port] Retry at server MsgHandler: 0x.."
_HANDLER = re.compile(
    r"\] \[([^\]]+)\] (MsgHandler created|Retry at server MsgHandler): (0x[0-9a-f]+)"
)


class XrdclLog:
    """Feed stderr lines as they arrive; stamps the phases on `timeline`.

    redirect: until a redirector's data server gets the request; connect: a new channel
    until its login; handshake: a security protocol, if the server asks for one; request:
    stats, opens and queries; streaming: the copy's kXR_sync until its answer; poll: until
    xrdcp notices; close: closing both files and exiting. `servers` (end -> "host:port")
    and `redirects` say where redirectors sent the requests, given the two endpoints'
    "host:port" (`source`, `destination`) to tell the ends apart.
    """

    def __init__(
        self,
        timeline: PhaseTimeline,
        clock: Clock,
        *,
        source: str | None = None,
        destination: str | None = None,
    ) -> None:
        self.timeline = timeline
        self.clock = clock
        self.redirects = 0
        self.servers: dict[str, str] = {}
        self._ends = {h: e for h, e in ((source, "source"), (destination, "destination")) if h}
        self._handler_hosts: dict[str, str] = {}
        self._source_open_for_copy = False
        self._copy_answered = False
        # XrdCl logs "Logged in" before "Authentication is required" (the login's answer
        # asks for it): what a login leads to is known from the line after it.
        self._logged_in_at: float | None = None

    def feed(self, line: str) -> None:
        now = self.clock.now()
        if self._logged_in_at is not None:
            at, self._logged_in_at = self._logged_in_at, None
            after_login = "handshake" if "Authentication is required" in line else "request"
            self.timeline.enter(after_login, at)
        phase = self.timeline.current
        handler = _HANDLER.search(line)
        if handler is not None:
            self._follow(handler.group(1), handler.group(2), handler.group(3), now)
        if "Creating new channel to" in line:
            self.timeline.enter("connect", now)
        elif "Logged in, session" in line:
            self._logged_in_at = now
        elif "Authentication is required" in line:
            self.timeline.enter("handshake", now)
        elif "Authenticated with" in line:
            self.timeline.enter("request", now)
        elif "(message: kXR_" not in line:
            return
        elif "Calling MsgHandler" in line and "kXR_open" in line and "tpc.dst=" in line:
            # The source opened for the copy: its URL names the destination (tpc.dst); the
            # destination's own open names the source (tpc.src) and comes before.
            self._source_open_for_copy = True
        elif "MsgHandler created" in line and "kXR_sync" in line and self._source_open_for_copy:
            self.timeline.begin_streaming(now)
        elif phase == "streaming" and "Calling MsgHandler" in line and "kXR_sync" in line:
            self._copy_answered = True
            self.timeline.enter("poll", now)
        elif self._copy_answered and "MsgHandler created" in line:
            self.timeline.enter("close", now)

    def _follow(self, host: str, event: str, handler: str, now: float) -> None:
        """A message handler created at `host`, or retried there: at another host than
        before, a redirector sent the request on."""
        before = self._handler_hosts.get(handler)
        self._handler_hosts[handler] = host
        if event == "MsgHandler created" or before is None or before == host:
            return
        self.redirects += 1
        self.timeline.redirected(now)
        end = self._ends.get(before)
        if end is not None:
            self._ends[host] = end
            self.servers[end] = host

"""What `gfal-copy -v` tells of a copy as it happens: progress and phases, checksum included.

gfal2 2.21 prints its events on stdout (`event: [ms] SIDE PLUGIN\tSTAGE:EDGE ...`) and,
with `-v`, a `monitor:` line at each progress report. Seen on our lab:

- https and gsiftp, `-K ADLER32` (checksum mode "both", as FTS drives gfal2): the source's
  digest is asked BEFORE the copy (`SOURCE ... CHECKSUM:ENTER` / `EXIT`; davix sends `HEAD`
  with `Want-Digest: ADLER32`, the gridftp plugin `CKSM ADLER32`), then the copy
  (`TRANSFER:ENTER` / `EXIT`), then the destination's (`DEST ... CHECKSUM:ENTER` / `EXIT`)
  and the comparison. Both parts are the `checksum` phase (PhaseTimeline sums a phase that
  occurs twice); between them the setup goes on as `request`.
- root://: gfal2 hands the check to XrdCl's copy job (checksum mode "end2end"), which asks
  both digests (kXR_query checksum) AFTER the copy and before its `TRANSFER:EXIT`; no event
  says so, but XrdCl's debug log (stderr) does: "Attempting checksum calculation." begins
  it, and the `TRANSFER:EXIT` that follows the verdict ends it.
"""

from __future__ import annotations

import re

from orchestrator.transfers.base import TransferObservation

# "monitor: SRC DST AVG INST BYTES ELAPSED" at each progress report.
_MONITOR = re.compile(r"^monitor: \S+ \S+ \d+ \d+ (\d+) \d+\s*$")
# gfal2 announces a finished copy with this event (a failed one raises before it).
_COPY_DONE = re.compile(r"^event: .*\bTRANSFER:EXIT\b")
# gfal2's own checksum step, per side: the source before the copy, the destination after.
_CHECKSUM = re.compile(r"^event: \[\d+\] (SOURCE|DEST)\s+\S+\s+CHECKSUM:(ENTER|EXIT)\b")
# XrdCl's copy job (root://) starts asking both digests after the copy.
_XRDCL_CHECKSUM = re.compile(r"\]\[Utility\s*\] Attempting checksum calculation\.")


class Gfal2Events:
    """Feed gfal-copy's stdout and stderr lines as they arrive; stamps `seen`'s phases.

    request: gfal-copy's start-up, stats, connections and the copy's request (it says
    nothing before its first progress); streaming: from the first progress line; close:
    from `TRANSFER:EXIT` to the exit; checksum: as the module says.
    """

    def __init__(self, seen: TransferObservation) -> None:
        self.seen = seen
        self.copy_done = False  # TRANSFER:EXIT was seen
        self._verified_after_copy = False  # XrdCl's checksum began: the copy is over

    def stdout_line(self, line: str) -> None:
        now = self.seen.request.clock.now()
        timeline = self.seen.timeline
        checksum = _CHECKSUM.match(line)
        if checksum is not None:
            side, edge = checksum.groups()
            after = "close" if side == "DEST" else "request"
            timeline.enter("checksum" if edge == "ENTER" else after, now)
            return
        if not self.copy_done and _COPY_DONE.match(line):
            self.copy_done = True
            timeline.enter("close", now)  # the copy is done: gfal-copy winds down
        match = _MONITOR.match(line)
        if match is None:
            return
        moved = int(match.group(1))
        # A progress line read after XrdCl's checksum began (two pipes) does not reopen
        # the copy's streaming.
        if not self._verified_after_copy:
            timeline.begin_streaming(now, moved)
        self.seen.progressed(moved, now)

    def stderr_line(self, line: str) -> None:
        if not self.copy_done and _XRDCL_CHECKSUM.search(line):
            self._verified_after_copy = True
            self.seen.timeline.enter("checksum", self.seen.request.clock.now())

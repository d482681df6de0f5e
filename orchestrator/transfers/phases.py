"""Where a transfer's time goes: its phases, from the moments its tool saw (one code path).

A tool stamps what it observes as it happens: `timeline.enter("handshake", at)` says the
handshake began at monotonic time `at`, ending the phase before it; `begin_streaming(at,
moved)` marks the first progress. `durations(end)` turns the stamps into consecutive
intervals from the transfer's start to its end, so the phases add up to its duration
exactly. A phase that occurs more than once (GridFTP and root:// connect to both servers)
is summed under its name. Meanings per protocol: docs/measurements.md.
"""

from __future__ import annotations

from orchestrator.transfers.record import ProgressPoint

# In the order a transfer goes through them; a tool uses those its protocol has.
# `authorize`: an x509 HTTP-TPC copy first asks the other server for a macaroon (macaroons.py).
# `redirect`: the request went to a redirector first; from then until the request goes to
# the final data server (`redirected`), whatever the hops cost.
# `checksum`: after the copy, both servers' digests asked and compared (checksums.py).
PHASES: tuple[str, ...] = (
    "authorize",
    "redirect",
    "connect",
    "handshake",
    "request",
    "streaming",
    "poll",
    "close",
    "checksum",
)


def _known(phase: str) -> str:
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; choose one of {', '.join(PHASES)}")
    return phase


class PhaseTimeline:
    """The phases one transfer entered and when; it begins in `first` at `start`."""

    def __init__(self, start: float, first: str = "connect") -> None:
        self.start = start
        self._marks: list[tuple[str, float]] = [(_known(first), start)]
        self.first_progress: ProgressPoint | None = None

    @property
    def current(self) -> str:
        return self._marks[-1][0]

    def enter(self, phase: str, at: float) -> None:
        """Phase `phase` began at `at`; a repeat of the current phase changes nothing."""
        if _known(phase) == self.current:
            return
        # Stamps from different sources (a trace hook, pipe reads) may tie or cross by
        # microseconds; a phase never begins before the one it ends.
        self._marks.append((phase, max(at, self._marks[-1][1])))

    def redirected(self, at: float) -> None:
        """The server asked sent the request on to another (a redirector's 3xx): all since
        the request first went out (after any `authorize`) becomes one `redirect` phase, and
        the next server's connection begins at `at`. Once per hop; before the first
        progress only."""
        if self.first_progress is not None:
            raise ValueError("a redirect after data began to flow")
        first = next(
            (i for i, (phase, _) in enumerate(self._marks) if phase != "authorize"),
            len(self._marks),
        )
        began = self._marks[first][1] if first < len(self._marks) else at
        self._marks[first:] = [("redirect", began), ("connect", max(at, began))]

    def begin_streaming(self, at: float, moved: int = 0) -> None:
        """The first progress: data starts to flow, `moved` bytes already moved. Once only."""
        if self.first_progress is not None:
            return
        self.enter("streaming", at)
        self.first_progress = ProgressPoint(self._marks[-1][1] - self.start, moved)

    def durations(self, end: float) -> dict[str, float]:
        """Seconds per phase, in order of first occurrence, adding up to `end - start`."""
        totals: dict[str, float] = {}
        bounds = [at for _, at in self._marks[1:]] + [end]
        for (phase, began), ended in zip(self._marks, bounds, strict=True):
            # A stamp after the end (a line read while the tool exits) is cut at the end.
            span = max(0.0, min(ended, end) - min(began, end))
            totals[phase] = totals.get(phase, 0.0) + span
        return totals

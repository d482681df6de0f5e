"""What one transfer leaves behind: timing, phases, bytes, outcome, error class, progress."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

Outcome = Literal["success", "failure"]
ErrorClass = Literal[
    "connect",
    "tls",
    "auth",
    "not-found",
    "remote-failure",
    "timeout",
    "killed",
    "checksum-mismatch",
]
ERROR_CLASSES: tuple[str, ...] = (
    "connect",
    "tls",
    "auth",
    "not-found",
    "remote-failure",
    "timeout",
    "killed",
    "checksum-mismatch",  # the copy completed, but source and destination digests differ
)


@dataclass(frozen=True)
class ProgressPoint:
    """Bytes moved so far, `elapsed` seconds after the transfer started (from perf markers)."""

    elapsed: float
    bytes: int


class Clock:
    """Monotonic time for durations, anchored once to the wall clock for the JSON timestamps.

    Deriving wall-clock stamps from the monotonic clock keeps `end - start` in the JSON equal
    to the measured duration even if NTP steps the system clock during a measurement.
    """

    def __init__(self) -> None:
        self._mono0 = time.monotonic()
        self._wall0 = datetime.now(UTC)

    def now(self) -> float:
        return time.monotonic()

    def wall(self, monotonic: float) -> datetime:
        return self._wall0 + timedelta(seconds=monotonic - self._mono0)


def iso(moment: datetime) -> str:
    """UTC ISO-8601 with microseconds and a `Z`, the form the webapp ingests."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class TransferRecord:
    """One TPC transfer. `start`/`end` are monotonic seconds; `started`/`ended` wall-clock."""

    index: int
    protocol: str
    source_url: str
    destination_url: str
    start: float
    end: float
    started: datetime
    ended: datetime
    bytes: int
    outcome: Outcome
    error_class: ErrorClass | None = None
    message: str = ""
    progress: list[ProgressPoint] = field(default_factory=list)
    # Seconds per phase (transfers/phases.py), adding up to the duration; a failed transfer
    # has the phases it reached. The first progress: when data began to flow, bytes by then.
    phases: dict[str, float] = field(default_factory=dict)
    first_progress: ProgressPoint | None = None
    # Through redirectors: the data server ("host:port", as the client saw it) that served
    # each end, when learned, and the redirects followed.
    source_server: str | None = None
    destination_server: str | None = None
    redirects: int = 0

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def setup_s(self) -> float | None:
        """Seconds from the request to the first progress; None if data never flowed."""
        return None if self.first_progress is None else self.first_progress.elapsed

    @property
    def streaming_gbps(self) -> float | None:
        """Gbit/s (1e9) moved after the first progress, over the streaming phase alone."""
        streaming = self.phases.get("streaming", 0.0)
        if self.first_progress is None or streaming <= 0:
            return None
        return max(0, self.bytes - self.first_progress.bytes) * 8 / streaming / 1e9

    @property
    def succeeded(self) -> bool:
        return self.outcome == "success"

    def to_json(self) -> dict[str, Any]:
        """The per-transfer entry of the measurement JSON the webapp ingests (its schema)."""
        return {
            "index": self.index,
            "start": iso(self.started),
            "end": iso(self.ended),
            "bytes": self.bytes,
            "outcome": self.outcome,
            "error_class": self.error_class,
            "message": self.message,
            "duration_s": round(self.duration, 6),
            "progress": [[round(p.elapsed, 3), p.bytes] for p in self.progress],
            "phases": {name: round(seconds, 6) for name, seconds in self.phases.items()},
            "streaming_gbps": None if (rate := self.streaming_gbps) is None else round(rate, 6),
            # only when there is something to say: a transfer between hosts says nothing new
            **({"source_server": self.source_server} if self.source_server else {}),
            **({"destination_server": self.destination_server} if self.destination_server else {}),
            **({"redirects": self.redirects} if self.redirects else {}),
        }

"""Incremental parser of an HTTP-TPC COPY response body: perf markers, then the verdict line.

The body is `Perf Marker` blocks (`Timestamp:`, `Stripe Index:`, `Stripe Bytes Transferred:`,
... `End`) every few seconds, and a last line `success: ...` or `failure: ...`. The HTTP
status is not trusted (XRootD 5.5 answers 201 on failure too), only that last line.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PerfMarker:
    timestamp: int | None
    stripe_index: int
    stripe_bytes: int


@dataclass
class PerfMarkerParser:
    """Feed text chunks as they arrive; read `markers`, `total_bytes` and `verdict`."""

    markers: list[PerfMarker] = field(default_factory=list)
    _pending: str = ""
    _block: dict[str, str] | None = None
    _stripe_bytes: dict[int, int] = field(default_factory=dict)
    _last_line: str = ""
    # The server's connections to the other end (`RemoteConnections: tcp:ADDR:PORT,...`),
    # as the latest marker gives them: which server the other end really was.
    remote_connections: list[str] = field(default_factory=list)

    def feed(self, text: str) -> list[PerfMarker]:
        """Consume a chunk; return the markers it completed."""
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        completed = []
        for line in lines:
            marker = self._line(line.strip())
            if marker is not None:
                completed.append(marker)
        return completed

    def close(self) -> None:
        """The body ended: the unterminated rest is the final line (sent without newline)."""
        if self._pending.strip():
            self._line(self._pending.strip())
        self._pending = ""

    @property
    def total_bytes(self) -> int:
        """Bytes moved so far: the latest count of every stripe, summed."""
        return sum(self._stripe_bytes.values())

    @property
    def verdict(self) -> tuple[bool, str] | None:
        """(succeeded, message) from the last line, or None if the body had no verdict."""
        head, _, rest = self._last_line.partition(":")
        if head == "success":
            return True, rest.strip()
        if head == "failure":
            return False, rest.strip()
        return None

    @property
    def last_line(self) -> str:
        return self._last_line

    def _line(self, line: str) -> PerfMarker | None:
        if not line:
            return None
        self._last_line = line
        if line == "Perf Marker":
            self._block = {}
            return None
        if self._block is None:
            return None
        if line == "End":
            block, self._block = self._block, None
            return self._marker(block)
        key, _, value = line.partition(":")
        self._block[key.strip()] = value.strip()
        return None

    def _marker(self, block: dict[str, str]) -> PerfMarker | None:
        try:
            marker = PerfMarker(
                timestamp=int(block["Timestamp"]) if "Timestamp" in block else None,
                stripe_index=int(block.get("Stripe Index", "0")),
                stripe_bytes=int(block["Stripe Bytes Transferred"]),
            )
        except (KeyError, ValueError):
            return None  # a malformed marker is skipped, the verdict still decides
        self._stripe_bytes[marker.stripe_index] = marker.stripe_bytes
        self.markers.append(marker)
        remote = block.get("RemoteConnections", "")
        peers = [p.removeprefix("tcp:") for p in remote.split(",") if p.strip()]
        if peers:
            self.remote_connections = peers
        return marker

"""The one small interface every transfer tool implements (rucio transfertool spirit)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.checksums import DEFAULT_CHECKSUM, Checksum
from orchestrator.transfers.phases import PhaseTimeline
from orchestrator.transfers.record import Clock, ErrorClass, ProgressPoint, TransferRecord

# Called with (transfer index, bytes moved so far) whenever a tool learns of progress.
ProgressCallback = Callable[[int, int], None]

DEFAULT_TIMEOUT = 600.0

# How a transfer is authorized: the client certificate (x509) or tokens minted per transfer.
Auth = Literal["x509", "token"]
AUTH_MODES: tuple[str, ...] = ("x509", "token")


@dataclass(frozen=True)
class TransferRequest:
    """One copy a tool is asked to make: `src_path` on `src` to `dst_path` on `dst`.

    Paths are names under the endpoints' data roots (e.g. `source_name(size)`). `size` is the
    expected byte count, reported as the record's bytes when the protocol says success;
    `index` names the copy among a measurement's K; `auth` is one of the tool's `auths`;
    `checksum` other than "none" ends the copy with the checksum step (checksums.py).
    """

    src: Endpoint
    dst: Endpoint
    src_path: str
    dst_path: str
    streams: int
    creds: ClientCredentials
    timeout: float = DEFAULT_TIMEOUT
    index: int = 0
    size: int | None = None
    clock: Clock = field(default_factory=Clock)
    on_progress: ProgressCallback | None = None
    auth: Auth = "x509"
    checksum: Checksum = DEFAULT_CHECKSUM


class TransferTool(ABC):
    """Copies what a `TransferRequest` names by third-party copy.

    `copy` never raises for a failed transfer: the failure is returned as data in the record.
    """

    name: str
    auths: tuple[str, ...] = ("x509",)
    # The auths with which the tool can take the checksum step (None: every one of `auths`),
    # and why not with the others.
    checksum_auths: tuple[str, ...] | None = None
    checksum_refusal: str = "it cannot ask for the digests so"

    @abstractmethod
    async def copy(self, request: TransferRequest) -> TransferRecord:
        """The copy itself; never raises for a failed transfer."""


@dataclass
class TransferObservation:
    """What a tool sees of one copy as it happens, turned into its record at the end.

    It begins at `start` (monotonic, the request's clock); `timeline` gets the phases the
    tool stamps; `progressed` keeps a progress point and tells the request's `on_progress`.
    """

    request: TransferRequest
    protocol: str
    source_url: str
    destination_url: str
    start: float
    timeline: PhaseTimeline
    progress: list[ProgressPoint] = field(default_factory=list)
    # what the tool learned of redirectors: the data servers that served each end, the hops
    source_server: str | None = None
    destination_server: str | None = None
    redirects: int = 0

    @classmethod
    def begin(
        cls,
        request: TransferRequest,
        protocol: str,
        source_url: str,
        destination_url: str,
        first_phase: str = "connect",
    ) -> TransferObservation:
        start = request.clock.now()
        timeline = PhaseTimeline(start, first_phase)
        return cls(request, protocol, source_url, destination_url, start, timeline)

    def progressed(self, moved: int, at: float | None = None) -> None:
        """`moved` bytes have moved by `at` (now when not given)."""
        at = self.request.clock.now() if at is None else at
        self.progress.append(ProgressPoint(at - self.start, moved))
        if self.request.on_progress is not None:
            self.request.on_progress(self.request.index, moved)

    def record(
        self,
        succeeded: bool,
        *,
        error_class: ErrorClass | None = None,
        message: str = "",
        moved: int | None = None,
    ) -> TransferRecord:
        """The record, ending now; on success the bytes are the expected size, else `moved`
        (by default the last progress point's count)."""
        request, end = self.request, self.request.clock.now()
        if moved is None:
            moved = self.progress[-1].bytes if self.progress else 0
        return TransferRecord(
            index=request.index,
            protocol=self.protocol,
            source_url=self.source_url,
            destination_url=self.destination_url,
            start=self.start,
            end=end,
            started=request.clock.wall(self.start),
            ended=request.clock.wall(end),
            bytes=request.size if succeeded and request.size is not None else moved,
            outcome="success" if succeeded else "failure",
            error_class=None if succeeded else (error_class or "remote-failure"),
            # A whole stderr dump does not belong in the database, nor the NUL xrdcp ends its
            # error with (PostgreSQL text cannot hold it; the webapp refuses the record).
            message=message.replace("\x00", "")[:2000],
            progress=self.progress,
            phases=self.timeline.durations(end),
            first_progress=self.timeline.first_progress,
            source_server=self.source_server,
            destination_server=self.destination_server,
            redirects=self.redirects,
        )

"""The one small interface every transfer tool implements (rucio transfertool spirit)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from orchestrator.endpoints import ClientCredentials, Endpoint
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
    """One copy a tool is asked to make: what `TransferTool.run` was given."""

    src: Endpoint
    dst: Endpoint
    src_path: str
    dst_path: str
    streams: int
    creds: ClientCredentials
    timeout: float
    index: int
    size: int | None
    clock: Clock
    on_progress: ProgressCallback | None
    auth: Auth


class TransferTool(ABC):
    """Copies `src_path` on `src` to `dst_path` on `dst` by third-party copy.

    Paths are names under the endpoints' data roots (e.g. `source_name(size)`). `run` never
    raises for a failed transfer: the failure is returned as data in the record. `size` is
    the expected byte count, reported as the record's bytes when the protocol says success.
    `auth` is one of the tool's `auths`. A tool implements `copy`, which gets the request.
    """

    name: str
    auths: tuple[str, ...] = ("x509",)

    async def run(
        self,
        src: Endpoint,
        dst: Endpoint,
        src_path: str,
        dst_path: str,
        streams: int,
        creds: ClientCredentials,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        index: int = 0,
        size: int | None = None,
        clock: Clock | None = None,
        on_progress: ProgressCallback | None = None,
        auth: Auth = "x509",
    ) -> TransferRecord:
        request = TransferRequest(
            src, dst, src_path, dst_path, streams, creds, timeout,
            index, size, clock or Clock(), on_progress, auth,
        )  # fmt: skip
        return await self.copy(request)

    @abstractmethod
    async def copy(self, request: TransferRequest) -> TransferRecord:
        """The copy itself; never raises for a failed transfer."""


def build_record(
    *,
    index: int,
    protocol: str,
    source_url: str,
    destination_url: str,
    clock: Clock,
    start: float,
    end: float,
    succeeded: bool,
    size: int | None,
    moved: int,
    error_class: ErrorClass | None = None,
    message: str = "",
    progress: list[ProgressPoint] | None = None,
    timeline: PhaseTimeline | None = None,
) -> TransferRecord:
    """A record from what a tool observed; on success the bytes are the expected size.

    `timeline` holds the phases the tool stamped; without one the record has no phases.
    """
    return TransferRecord(
        index=index,
        protocol=protocol,
        source_url=source_url,
        destination_url=destination_url,
        start=start,
        end=end,
        started=clock.wall(start),
        ended=clock.wall(end),
        bytes=size if succeeded and size is not None else moved,
        outcome="success" if succeeded else "failure",
        error_class=None if succeeded else (error_class or "remote-failure"),
        # A whole stderr dump does not belong in the database, nor the NUL xrdcp ends its
        # error with (PostgreSQL text cannot hold it; the webapp refuses the record).
        message=message.replace("\x00", "")[:2000],
        progress=progress or [],
        phases=timeline.durations(end) if timeline is not None else {},
        first_progress=timeline.first_progress if timeline is not None else None,
    )

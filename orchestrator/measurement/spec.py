"""What a measurement is asked to do, in two objects passed down whole.

`MeasurementSpec`: one measurement by its nodes' names and its dimensions (protocol,
streams, authorization, client, checksum step), as a campaign plans it.
`MeasurementRequest`: a spec on two endpoints with K copies of one file of S bytes, as
`run_measurement` takes it; its `transfer_request` is what each copy's tool gets. A new
dimension is a field of the spec (with a default) and, where the tools need it, of
`TransferRequest`.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Literal

from orchestrator.endpoints import ClientCredentials, Endpoint, in_token_area, source_name
from orchestrator.transfers import DEFAULT_CLIENT, ProgressCallback
from orchestrator.transfers.base import DEFAULT_TIMEOUT, Auth, TransferRequest
from orchestrator.transfers.checksums import DEFAULT_CHECKSUM, Checksum
from orchestrator.transfers.record import Clock

DEFAULT_TRANSFERS = 11
DEFAULT_FILE_SIZE = 2**30
Scope = Literal["host", "site"]
SCOPES: tuple[Scope, ...] = ("host", "site")
Lane = tuple[Endpoint, Endpoint]


@dataclass(frozen=True)
class MeasurementSpec:
    """One measurement to take: K transfers src -> dst with one protocol and stream count.

    Every field after src and dst is a dimension a campaign varies (`plan_measurements`);
    a new one is a field here, with a default, and its values in `CampaignSettings`. Whether
    a tool can take the combination is the tools' question (`transfers.unsupported_reason`).
    """

    src: str
    dst: str
    protocol: str
    streams: int
    auth: Auth = "x509"
    client: str = DEFAULT_CLIENT
    checksum: Checksum = DEFAULT_CHECKSUM  # adler32: each copy ends with the checksum step
    # host: src and dst are two hosts. site: src and dst name two sites' fronts (their
    # redirectors, "<site>-rdr"); `hosts` m: a point of the scaling sweep, the copies spread
    # over m host pairs of the two sites, addressed to the hosts (campaign/site_scope.py).
    scope: Scope = "host"
    hosts: int | None = None

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset((self.src, self.dst))

    @property
    def key(self) -> str:
        """src->dst/protocol/streams (and any further dimension), for logs and errors."""
        # a dimension at its default (x509, native) is left out: the paper's key stays short
        values = [
            str(getattr(self, f.name))
            for f in fields(self)[2:]
            if f.default is MISSING or getattr(self, f.name) != f.default
        ]
        return f"{self.src}->{self.dst}/" + "/".join(values)


def destination_name(measurement_uuid: str, index: int, protocol: str, auth: Auth = "x509") -> str:
    """Where transfer `index` writes: its own file.

    XRootD's files (https, root) are unique per measurement and deleted afterwards. GridFTP
    writes one file per transfer slot, overwritten by the next measurement: on a cluster its
    server's memory-backed directory is its own (XRootD cannot delete there) and
    globus-url-copy cannot delete, so the slots bound what stays (K files, as the paper's
    testDestinationFile1..K). Where the two servers share a directory (the lab), the
    deletion through XRootD removes them too.
    """
    if protocol == "gridftp":
        return f"/tpcbench-gridftp-{index}"
    name = f"/tpcbench-{measurement_uuid}-{index}"
    return in_token_area(name) if auth == "token" else name


@dataclass(frozen=True)
class MeasurementRequest:
    """A spec on its two endpoints: `transfers` concurrent copies of one `file_size` file.

    The copies read `source_path` (by default the source file of that size, in the token
    area with tokens). Checked once, here: the counts are positive and the endpoints are
    the spec's nodes.
    """

    spec: MeasurementSpec
    src: Endpoint
    dst: Endpoint
    transfers: int = DEFAULT_TRANSFERS
    file_size: int = DEFAULT_FILE_SIZE
    source_path: str | None = None
    # Where each copy goes: copy i takes lanes[i % len(lanes)], a (source, destination)
    # endpoint pair; empty: every copy goes src -> dst (a host pair, or two sites' fronts).
    lanes: tuple[Lane, ...] = ()

    def __post_init__(self) -> None:
        if self.spec.streams < 1 or self.transfers < 1 or self.file_size < 1:
            raise ValueError("streams, transfers and file_size must be positive")
        if (self.src.name, self.dst.name) != (self.spec.src, self.spec.dst):
            raise ValueError(
                f"the endpoints {self.src.name} -> {self.dst.name} are not the spec's "
                f"{self.spec.src} -> {self.spec.dst}"
            )

    @classmethod
    def between(
        cls,
        src: Endpoint,
        dst: Endpoint,
        protocol: str,
        streams: int,
        *,
        auth: Auth = "x509",
        client: str = DEFAULT_CLIENT,
        checksum: Checksum = DEFAULT_CHECKSUM,
        transfers: int = DEFAULT_TRANSFERS,
        file_size: int = DEFAULT_FILE_SIZE,
        source_path: str | None = None,
    ) -> MeasurementRequest:
        """The request for one (protocol, streams, auth, client, checksum) between two
        endpoints."""
        spec = MeasurementSpec(src.name, dst.name, protocol, streams, auth, client, checksum)
        return cls(spec, src, dst, transfers, file_size, source_path)

    def lane(self, index: int) -> Lane:
        """The (source, destination) endpoints of copy `index`."""
        return self.lanes[index % len(self.lanes)] if self.lanes else (self.src, self.dst)

    @property
    def read_path(self) -> str:
        """The file every copy reads."""
        if self.source_path is not None:
            return self.source_path
        name = source_name(self.file_size)
        return in_token_area(name) if self.spec.auth == "token" else name

    def transfer_request(
        self,
        measurement_uuid: str,
        index: int,
        creds: ClientCredentials,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        clock: Clock | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> TransferRequest:
        """Copy `index` of the measurement `measurement_uuid`, to a file of its own."""
        spec = self.spec
        src, dst = self.lane(index)
        return TransferRequest(
            src=src,
            dst=dst,
            src_path=self.read_path,
            dst_path=destination_name(measurement_uuid, index, spec.protocol, spec.auth),
            streams=spec.streams,
            creds=creds,
            timeout=timeout,
            index=index,
            size=self.file_size,
            clock=clock or Clock(),
            on_progress=on_progress,
            auth=spec.auth,
            checksum=spec.checksum,
        )

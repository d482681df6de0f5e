"""The paper profile (`tpcbench lab up --profile paper`) and the TCP buffer rule
(`--tcp-buffer auto`): the lab set up so that what it measures can be held against the paper.

Pure arithmetic: nothing here touches the system.

**The TCP buffer rule.** ESnet's fasterdata host tuning sizes a data-transfer node's TCP
buffers by the path: a window of bandwidth x RTT (the bandwidth-delay product, BDP) keeps the
path full. Linux counts a socket's buffer in memory, not in payload, and gives only about
half of the receive buffer to the window (tcp_adv_win_scale's old default; newer kernels
measure the ratio of payload to memory, typically 0.5 to 0.8 at MTU 1500), so the buffer
maximum (tcp_rmem / tcp_wmem max) is **2 x BDP** of the link rate and the lab's largest
RTT, rounded up to a power of two (the values sysctl tables are written in), and:
- never below `DEFAULT_TCP_BUFFER` (32 MiB, the lab's default): a smaller maximum gives
  nothing back (Linux grows a socket's buffers only as far as a connection needs, so an
  unused maximum costs no memory) and could only cap a stream below what its path carries,
  the very artefact the rule is there to avoid;
- never above 1 GiB, the most the lab sets (`TcpSettings.validate`).

**The paper profile.** The paper measured K = 11 concurrent copies of 1 GiB files, 8 and 1
streams, HTTPS-TPC and GridFTP, between PRP sites on 100 Gbit/s links. The lab keeps what
it can (K, streams, protocols, x509, the native clients, the `prp` RTTs, several campaigns
with each pair's link baseline) and scales what it cannot:
- the link: 2 Gbit/s, the rate our 2-core lab holds faithfully (bench/fidelity.py reads
  0.96 to 1.05 of the bare tools there; docs/measurements.md, Fidelity);
- the file: scaled from 1 GiB on 100 Gbit/s to the lab's link, so that file size / BDP is the
  paper's, AND large enough that a transfer at its share of the link (link / K) lasts
  `MIN_ROUNDS_PAST_SLOW_START` round trips past slow start at the largest RTT; the larger of
  the two, rounded up to a power of two (`file_size_rule` says both numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.errors import UserError
from orchestrator.lab.wan_profile import DEFAULT_TCP_BUFFER
from orchestrator.sizes import format_size

MAX_TCP_BUFFER = 1 << 30  # TcpSettings.validate's upper bound
AUTO = "auto"

# The paper's setting (Fajardo et al., Section 3).
PAPER_LINK_GBIT = 100.0
PAPER_FILE_SIZE = 1 << 30
PAPER_TRANSFERS = 11
PAPER_FILESIZE_MULTIPLES = (1, 2, 5, 10)  # Figure 4's files: 1, 2, 5, 10 GiB

# TCP's start: an initial window of 10 segments (RFC 6928) of 1448 bytes (MTU 1500 with
# timestamps); slow start doubles it each round trip, so it sends about 2 windows in all.
INITIAL_WINDOW_BYTES = 10 * 1448
SLOW_START_WINDOWS = 2.0
MIN_ROUNDS_PAST_SLOW_START = 20


@dataclass(frozen=True)
class BufferChoice:
    """A TCP buffer maximum and why: `source` is "auto" (the rule), "given" or "default"."""

    buffer_max: int
    source: str
    link_gbit: float | None = None
    rtt_ms: float | None = None

    @property
    def bdp_bytes(self) -> float | None:
        if self.link_gbit is None or self.rtt_ms is None:
            return None
        return bdp_bytes(self.link_gbit, self.rtt_ms)

    def reason(self) -> str:
        """One line: the value and how it was chosen."""
        size = format_size(self.buffer_max)
        if self.source == "given":
            return f"{size} (given with --tcp-buffer)"
        if self.source == "default":
            return f"{size} (the default; --tcp-buffer auto sizes it by the link and the RTTs)"
        bdp = self.bdp_bytes or 0.0
        twice = 2 * bdp
        rule = (
            f"2 x BDP = 2 x {self.link_gbit:g} Gbit/s x {self.rtt_ms:g} ms = "
            f"{_mb(twice)}, rounded up to a power of two"
        )
        rounded = _power_of_two_at_least(twice)
        if rounded < self.buffer_max:
            floor = format_size(DEFAULT_TCP_BUFFER)
            rule += f" ({format_size(rounded)}), raised to the {floor} floor"
        elif rounded > self.buffer_max:
            rule += f" ({format_size(rounded)}), capped at {format_size(MAX_TCP_BUFFER)}"
        return f"{size} (auto: {rule})"

    def to_json(self) -> dict[str, object]:
        return {
            "buffer_max": self.buffer_max,
            "source": self.source,
            "link_gbps": self.link_gbit,
            "rtt_ms": self.rtt_ms,
            "reason": self.reason(),
        }


@dataclass(frozen=True)
class FileSizeChoice:
    """The paper profile's file size, with the two numbers it satisfies."""

    file_size: int
    link_gbit: float
    rtt_ms: float
    transfers: int
    scaled: float  # the paper's 1 GiB x (our link / the paper's): the paper's size / BDP
    for_rounds: float  # the smallest size that lasts MIN_ROUNDS_PAST_SLOW_START round trips

    @property
    def paper_ratio(self) -> float:
        """The paper's file size / BDP, at the same RTT."""
        return PAPER_FILE_SIZE / bdp_bytes(PAPER_LINK_GBIT, self.rtt_ms)

    @property
    def ratio(self) -> float:
        """Our file size / BDP."""
        return self.file_size / bdp_bytes(self.link_gbit, self.rtt_ms)

    @property
    def share_window(self) -> float:
        """Bytes one transfer has in flight at its share of the link (link / K) at the RTT."""
        return bdp_bytes(self.link_gbit / self.transfers, self.rtt_ms)

    @property
    def slow_start_rounds(self) -> float:
        """Round trips one stream's slow start takes to reach that window."""
        return max(math.log2(self.share_window / INITIAL_WINDOW_BYTES), 0.0)

    def rounds_past_slow_start(self, size: float | None = None) -> float:
        """Round trips a transfer of `size` (default: ours) lasts after its slow start."""
        return (size if size is not None else self.file_size) / self.share_window - (
            SLOW_START_WINDOWS
        )

    def explain(self) -> list[str]:
        """What `lab up --profile paper` prints and docs/reproduce.md quotes."""
        return [
            f"file size {format_size(self.file_size)}: file / BDP at {self.rtt_ms:g} ms is "
            f"{self.ratio:.2f} (the paper's 1 GiB on {PAPER_LINK_GBIT:g} Gbit/s: "
            f"{self.paper_ratio:.2f}, i.e. {_mb(self.scaled)} on {self.link_gbit:g} Gbit/s)",
            f"  one of K = {self.transfers} transfers at its share of the link moves "
            f"{_mb(self.share_window)} per round trip, leaves slow start after "
            f"{self.slow_start_rounds:.1f} round trips, and then lasts "
            f"{self.rounds_past_slow_start():.0f} more (at the paper's ratio: "
            f"{self.rounds_past_slow_start(self.scaled):.0f}; wanted: at least "
            f"{MIN_ROUNDS_PAST_SLOW_START}, i.e. {_mb(self.for_rounds)})",
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "file_size": self.file_size,
            "link_gbps": self.link_gbit,
            "rtt_ms": self.rtt_ms,
            "transfers": self.transfers,
            "paper_ratio": round(self.paper_ratio, 3),
            "ratio": round(self.ratio, 3),
            "scaled_bytes": round(self.scaled),
            "for_rounds_bytes": round(self.for_rounds),
            "rounds_past_slow_start": round(self.rounds_past_slow_start(), 1),
            "slow_start_rounds": round(self.slow_start_rounds, 1),
        }


@dataclass(frozen=True)
class PaperProfile:
    """What `lab up --profile paper` and `tpcbench reproduce` take unless told otherwise."""

    name: str = "paper"
    nodes: int = 4
    rtt: str = "prp"
    link_gbit: float = 2.0
    transfers: int = PAPER_TRANSFERS
    streams: tuple[int, ...] = (8, 1)
    protocols: tuple[str, ...] = ("https", "gridftp")
    auth: str = "x509"
    client: str = "native"
    repetitions: int = 3  # campaigns; docs/reproduce.md says how long they take
    baseline_seconds: int = 5  # each pair's link, per campaign, after...
    baseline_omit: int = 2  # ... this much of slow start
    prelim_max: int = 12  # Figure 3's concurrency levels, 1..12
    filesize_max: int = 6  # Figure 4's, fewer: its largest files take most of the time
    filesize_multiples: tuple[int, ...] = PAPER_FILESIZE_MULTIPLES

    def summary(self) -> str:
        """One line for --help: what the profile sets."""
        return (
            f"{self.nodes} nodes on the {self.rtt} RTTs, {self.link_gbit:g} Gbit/s links, "
            "--tcp-buffer auto, a file scaled from the paper's 1 GiB on 100 Gbit/s (lab up "
            f"prints the numbers); tpcbench reproduce then runs K = {self.transfers}, streams "
            f"{','.join(map(str, self.streams))}, {', '.join(self.protocols)}, "
            f"{self.repetitions} campaigns"
        )


PAPER = PaperProfile()
PROFILES = {PAPER.name: PAPER}


def lab_profile(name: str) -> PaperProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise UserError(f"unknown lab profile {name!r}; known: {', '.join(PROFILES)}") from None


def bdp_bytes(link_gbit: float, rtt_ms: float) -> float:
    """The bandwidth-delay product in bytes: what is in flight on a full link."""
    return link_gbit * 1e9 * rtt_ms / 1e3 / 8


def tcp_buffer_rule(link_gbit: float, rtt_ms: float) -> BufferChoice:
    """The buffer maximum for a link of `link_gbit` whose largest RTT is `rtt_ms`."""
    if link_gbit <= 0 or rtt_ms < 0:
        raise UserError("--tcp-buffer auto needs a positive link capacity and RTT")
    rounded = _power_of_two_at_least(2 * bdp_bytes(link_gbit, rtt_ms))
    value = min(max(rounded, DEFAULT_TCP_BUFFER), MAX_TCP_BUFFER)
    return BufferChoice(value, AUTO, link_gbit, rtt_ms)


def choose_tcp_buffer(
    given: int | str | None, link_gbit: float | None, largest_rtt_ms: float | None
) -> BufferChoice:
    """`--tcp-buffer` as given (a size, "auto" or nothing): nothing means auto when the link
    and the RTTs are both known, else the default."""
    known = link_gbit is not None and largest_rtt_ms is not None
    if given == AUTO or (given is None and known):
        if not known:
            raise UserError(
                "--tcp-buffer auto sizes the buffer by the link and the largest RTT; give "
                "--link-capacity and --rtt too, or a size (e.g. --tcp-buffer 64MiB)"
            )
        return tcp_buffer_rule(link_gbit, largest_rtt_ms)  # type: ignore[arg-type]
    if given is None:
        return BufferChoice(DEFAULT_TCP_BUFFER, "default")
    if isinstance(given, str):
        raise UserError(f"--tcp-buffer {given!r}: give a size such as 64MiB, or auto")
    return BufferChoice(given, "given", link_gbit, largest_rtt_ms)


def file_size_rule(
    link_gbit: float, rtt_ms: float, transfers: int = PAPER_TRANSFERS
) -> FileSizeChoice:
    """The paper profile's file size for this link and largest RTT (see the module doc)."""
    if link_gbit <= 0 or rtt_ms <= 0 or transfers < 1:
        raise UserError("the paper profile needs a link capacity, an RTT and K > 0")
    scaled = PAPER_FILE_SIZE * link_gbit / PAPER_LINK_GBIT
    share = bdp_bytes(link_gbit / transfers, rtt_ms)
    for_rounds = (MIN_ROUNDS_PAST_SLOW_START + SLOW_START_WINDOWS) * share
    size = _power_of_two_at_least(max(scaled, for_rounds, 1 << 20))
    return FileSizeChoice(size, link_gbit, rtt_ms, transfers, scaled, for_rounds)


def _power_of_two_at_least(value: float) -> int:
    """The smallest power of two >= value; a value a rounding error above one is that one."""
    return 1 << max(math.ceil(math.log2(max(value, 1.0)) - 1e-9), 0)


def _mb(value: float) -> str:
    return f"{value / 1e6:.1f} MB"


@dataclass(frozen=True)
class LabChoice:
    """What `lab up` starts once a profile and the options given are put together."""

    nodes: int
    rtt: str | None
    link_gbit: float | None
    buffer: BufferChoice
    file_size: int
    profile: PaperProfile | None = None
    given: tuple[str, ...] = ()  # the profile's settings the command line gave instead
    file_rule: FileSizeChoice | None = None

    def record(self) -> dict[str, object]:
        """The inventory's "profile" section ({} without a profile)."""
        if self.profile is None:
            return {}
        return {
            "name": self.profile.name,
            "given": list(self.given),
            "file_size_rule": self.file_rule.to_json() if self.file_rule else None,
            "tcp_buffer": self.buffer.to_json(),
        }

    def explain(self) -> list[str]:
        """What `lab up` prints about the profile and the TCP buffer."""
        lines = []
        if self.profile is not None:
            given = f"; given instead: {', '.join(self.given)}" if self.given else ""
            lines.append(f"profile {self.profile.name}: {self.profile.summary()}{given}")
            if self.file_rule is not None and "file-size" not in self.given:
                lines.extend(self.file_rule.explain())
        lines.append(f"TCP buffer maximum {self.buffer.reason()}")
        return lines


def choose_lab(
    profile_name: str | None,
    *,
    nodes: int | None,
    rtt: str | None,
    link_gbit: float | None,
    tcp_buffer: int | str | None,
    file_size: int | None,
    largest_rtt_ms: Callable[[str, int], float],
    default_nodes: int = 3,
    default_file_size: int = PAPER_FILE_SIZE,
    site_link_gbit: float | None = None,
) -> LabChoice:
    """The lab `lab up` starts: options given win over the profile's, the profile's over the
    defaults; `largest_rtt_ms(spec, nodes)` reads an --rtt spec (wan_profile.rtt_matrix).
    In a site lab (`site_link_gbit`, --site-link-gbit) a host's copies across the WAN also
    cross its site's uplink: the buffer is sized by the narrower of the two links."""
    profile = lab_profile(profile_name) if profile_name else None
    given = {
        "nodes": nodes,
        "rtt": rtt,
        "link-capacity": link_gbit,
        "tcp-buffer": tcp_buffer,
        "file-size": file_size,
    }
    if profile is not None:
        nodes = profile.nodes if nodes is None else nodes
        rtt = profile.rtt if rtt is None else rtt
        link_gbit = profile.link_gbit if link_gbit is None else link_gbit
        tcp_buffer = AUTO if tcp_buffer is None else tcp_buffer
    nodes = default_nodes if nodes is None else nodes
    largest = largest_rtt_ms(rtt, nodes) if rtt is not None else None
    path_gbit = min((g for g in (link_gbit, site_link_gbit) if g), default=None)
    buffer = choose_tcp_buffer(tcp_buffer, path_gbit, largest)
    rule = None
    if profile is not None:
        if link_gbit is None or not largest:
            raise UserError(
                f"the {profile.name} profile needs a link capacity and a WAN with RTTs above "
                f"0 ms (it sets --rtt {profile.rtt} --link-capacity {profile.link_gbit:g}gbit)"
            )
        rule = file_size_rule(link_gbit, largest, profile.transfers)
    if file_size is None:
        file_size = rule.file_size if rule is not None else default_file_size
    return LabChoice(
        nodes=nodes,
        rtt=rtt,
        link_gbit=link_gbit,
        buffer=buffer,
        file_size=file_size,
        profile=profile,
        given=tuple(k for k, v in given.items() if v is not None) if profile else (),
        file_rule=rule,
    )

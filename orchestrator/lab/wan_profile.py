"""Which WAN the lab emulates: a round-trip time per node pair, a link capacity, TCP settings.

`--rtt SPEC` is one of
- `uniform:30ms`: every pair has the same RTT;
- `prp`: a built-in profile, RTTs derived from the geography of real research-network sites
  (`PRP_SITES`): great-circle distance x ROUTE_FACTOR, at 200 km per ms in fibre, both ways;
- a matrix file, per ordered pair: YAML `rtt_ms: {lab-1: {lab-2: 10, lab-3: 30ms}, ...}` or
  CSV rows `src,dst,rtt_ms`. A round trip crosses both directions, so a pair's two entries
  must agree; one entry is enough.
Pure parsing and arithmetic: nothing here touches the system.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from orchestrator.errors import UserError

MAX_RTT_MS = 2000.0
FIBRE_KM_PER_MS = 200.0  # light in glass: c / 1.5
ROUTE_FACTOR = 1.5  # fibre routes are longer than the great circle between two sites
EARTH_RADIUS_KM = 6371.0
DEFAULT_TCP_BUFFER = 32 << 20  # tcp_rmem / tcp_wmem maximum per node
DEFAULT_CONGESTION_CONTROL = "bbr"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|µs|ms|s)?\s*$", re.I)
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:bit(?:/s)?|bps)?\s*$", re.I)
_RATE_UNITS = {"": 1.0, "k": 1e-6, "m": 1e-3, "g": 1.0, "t": 1e3}  # in Gbit/s; bare = Gbit/s


@dataclass(frozen=True)
class Site:
    """A research-network site: where a profile's node stands."""

    name: str
    place: str
    latitude: float
    longitude: float


# Sites of the Pacific Research Platform / Nautilus and its partners, in the order lab nodes
# take them (lab-1 = UCSD, ...): the first four already span 10 to 91 ms.
PRP_SITES = (
    Site("UCSD", "San Diego, California", 32.8801, -117.2340),
    Site("Stanford", "Stanford, California", 37.4275, -122.1697),
    Site("UNL", "Lincoln, Nebraska", 40.8202, -96.7005),
    Site("UHawaii", "Honolulu, Hawaii", 21.2969, -157.8171),
    Site("Amsterdam", "Amsterdam, Netherlands (SURF, NetherLight)", 52.3560, 4.9550),
    Site("Caltech", "Pasadena, California", 34.1377, -118.1253),
    Site("StarLight", "Chicago, Illinois", 41.8961, -87.6189),
    Site("UCLA", "Los Angeles, California", 34.0689, -118.4452),
    Site("UCSC", "Santa Cruz, California", 36.9914, -122.0609),
)
PROFILES = {"prp": PRP_SITES}


@dataclass(frozen=True)
class RttMatrix:
    """Target RTT in ms of every ordered pair of nodes (symmetric), and where it came from."""

    spec: str
    rtt_ms: dict[tuple[str, str], float]
    sites: dict[str, str] = field(default_factory=dict)  # node -> site name (profiles)

    def target(self, src: str, dst: str) -> float:
        return self.rtt_ms[(src, dst)]

    def targets_from(self, src: str) -> dict[str, float]:
        return {dst: rtt for (s, dst), rtt in sorted(self.rtt_ms.items()) if s == src}


@dataclass(frozen=True)
class TcpSettings:
    """What every node's namespace is set to: results follow window / RTT, so set, not inherit."""

    congestion_control: str = DEFAULT_CONGESTION_CONTROL
    buffer_max: int = DEFAULT_TCP_BUFFER
    why: str = ""  # how buffer_max was chosen (paper_profile.BufferChoice.reason), for status

    def validate(self) -> None:
        """UserError unless the nodes may use the congestion control and the buffer is sane.

        A namespace other than the host's may only pick what the host allows
        (tcp_allowed_congestion_control); widening that is the operator's call, not ours."""
        proc = Path("/proc/sys/net/ipv4")
        available = (proc / "tcp_available_congestion_control").read_text().split()
        allowed = (proc / "tcp_allowed_congestion_control").read_text().split()
        if self.congestion_control not in available:
            raise UserError(
                f"congestion control {self.congestion_control!r} is not available here; "
                f"use one of: {', '.join(allowed)}"
            )
        if self.congestion_control not in allowed:
            wanted = " ".join([*allowed, self.congestion_control])
            raise UserError(
                f"the host does not allow {self.congestion_control!r} in other network "
                f"namespaces; allow it with: sysctl -w "
                f"net.ipv4.tcp_allowed_congestion_control='{wanted}', or use one of: "
                f"{', '.join(allowed)}"
            )
        if not 64 << 10 <= self.buffer_max <= 1 << 30:
            raise UserError(f"--tcp-buffer {self.buffer_max} is out of range; use 64KiB to 1GiB")

    def sysctls(self) -> dict[str, str]:
        return {
            "net.ipv4.tcp_congestion_control": self.congestion_control,
            "net.ipv4.tcp_rmem": f"4096 131072 {self.buffer_max}",
            "net.ipv4.tcp_wmem": f"4096 16384 {self.buffer_max}",
        }


def parse_duration_ms(text: str | float | int, what: str = "RTT") -> float:
    """'30ms', '0.5s', '250us' or a bare number of ms -> ms; UserError on anything else."""
    if isinstance(text, bool):
        raise UserError(f"{what} {text!r} is not a duration; write e.g. 30ms")
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = _DURATION.match(str(text))
        if match is None:
            raise UserError(f"{what} {text!r} is not a duration; write e.g. 30ms, 0.5s or 30")
        scale = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}[(match.group(2) or "ms").lower()]
        value = float(match.group(1)) * scale
    if not 0 <= value <= MAX_RTT_MS or math.isnan(value):
        raise UserError(f"{what} {text!r} is out of range; use 0 to {MAX_RTT_MS:.0f} ms")
    return value


def parse_rate_gbit(text: str | float) -> float:
    """'10gbit', '2.5G', '500mbit', '1Gbit/s' or a bare number of Gbit/s -> Gbit/s."""
    match = _RATE.match(str(text))
    if match is None or float(match.group(1)) <= 0:
        raise UserError(f"link capacity {text!r} is not a rate; write e.g. 10gbit, 2.5G or 500mbit")
    return float(match.group(1)) * _RATE_UNITS[match.group(2).lower()]


def great_circle_km(a: Site, b: Site) -> float:
    lat1, lon1, lat2, lon2 = map(math.radians, (a.latitude, a.longitude, b.latitude, b.longitude))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def derived_rtt_ms(a: Site, b: Site) -> float:
    """RTT from geography: there and back along a fibre ROUTE_FACTOR x the great circle."""
    return round(2 * great_circle_km(a, b) * ROUTE_FACTOR / FIBRE_KM_PER_MS, 1)


def rtt_matrix(spec: str, nodes: Sequence[str]) -> RttMatrix:
    """The targets `spec` gives the ordered pairs of `nodes` (lab-1, lab-2, ... in order)."""
    spec = spec.strip()
    if spec.startswith("uniform:"):
        rtt = parse_duration_ms(spec.removeprefix("uniform:"))
        return RttMatrix(spec, {(a, b): rtt for a in nodes for b in nodes if a != b})
    if spec in PROFILES:
        sites = PROFILES[spec]
        if len(nodes) > len(sites):
            raise UserError(
                f"the {spec} profile has {len(sites)} sites; use --nodes {len(sites)} or fewer"
            )
        placed = dict(zip(nodes, sites, strict=False))
        pairs = {
            (a, b): derived_rtt_ms(placed[a], placed[b]) for a in nodes for b in nodes if a != b
        }
        return RttMatrix(spec, pairs, {node: site.name for node, site in placed.items()})
    path = Path(spec)
    if not path.is_file():
        known = ", ".join(PROFILES)
        raise UserError(
            f"--rtt {spec!r} is neither uniform:<RTT>, a profile ({known}) nor a matrix file"
        )
    return RttMatrix(spec, _matrix_from_entries(_read_entries(path), nodes, spec))


def _read_entries(path: Path) -> list[tuple[str, str, str | float]]:
    """(src, dst, rtt) entries of a YAML or CSV matrix file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"cannot read the RTT matrix {path}: {exc.strerror}") from None
    if path.suffix.lower() == ".csv":
        rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("#")]
        if rows and rows[0][:3] == ["src", "dst", "rtt_ms"]:
            rows = rows[1:]
        if any(len(r) != 3 for r in rows):
            raise UserError(f"{path}: every CSV row must be src,dst,rtt_ms")
        return [(r[0].strip(), r[1].strip(), r[2].strip()) for r in rows]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    table = data.get("rtt_ms") if isinstance(data, dict) else None
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise UserError(f"{path}: want `rtt_ms: {{src: {{dst: RTT, ...}}, ...}}` (see docs/lab.md)")
    return [(str(src), str(dst), rtt) for src, row in table.items() for dst, rtt in row.items()]


def _matrix_from_entries(
    entries: list[tuple[str, str, str | float]], nodes: Sequence[str], origin: str
) -> dict[tuple[str, str], float]:
    known = set(nodes)
    given: dict[tuple[str, str], float] = {}
    for src, dst, raw in entries:
        named = {src, dst} <= known  # a site lab's matrix names its sites (lab up --sites)
        lab_pair = re.fullmatch(r"lab-\d+", src) and re.fullmatch(r"lab-\d+", dst)
        if not (named or lab_pair) or src == dst:
            raise UserError(f"{origin}: {src} -> {dst} is not a pair of lab nodes (lab-1, ...)")
        if src in known and dst in known:  # a matrix may cover more nodes than the lab has
            given[(src, dst)] = parse_duration_ms(raw, f"RTT {src} -> {dst}")
    pairs: dict[tuple[str, str], float] = {}
    for a in nodes:
        for b in nodes:
            if a == b:
                continue
            there, back = given.get((a, b)), given.get((b, a))
            if there is None and back is None:
                raise UserError(f"{origin} has no RTT for {a} -> {b}; add it (one way is enough)")
            if there is not None and back is not None and abs(there - back) > 1e-9:
                raise UserError(
                    f"{origin}: {a} -> {b} is {there:g} ms but {b} -> {a} is {back:g} ms; a round "
                    "trip crosses both ways, so give one value"
                )
            pairs[(a, b)] = there if there is not None else back  # type: ignore[assignment]
    return pairs

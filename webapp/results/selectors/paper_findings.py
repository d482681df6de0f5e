"""The paper's three findings over the stored measurements, each beside the paper's figure
with a 95% bootstrap confidence interval (`python webapp/manage.py paper_report`).

Measurements count when they have a throughput (at least one transfer succeeded), as on the
dashboard's pages. Paired comparisons are made within a cell, so that what differs between
the two sides is what is compared, not the pair, the campaign or the time of day:
1. HTTPS-TPC versus GridFTP: cells (campaign, ordered pair, streams, auth, client, checksum)
   with both protocols; ours = mean HTTPS / mean GridFTP over the cells, resampling cells.
   Paper: 1.20.
2. One stream versus eight, per protocol: cells (campaign, pair, protocol, auth, client,
   checksum) with 1 and 8 streams; ours = mean single / mean multi. Paper: at least 1.
3. Latency sensitivity at 8 streams (X.509, native clients, no checksum step): Figure 7's
   points, per pair and protocol the mean RTT and mean throughput; per protocol the
   least-squares slope of throughput against RTT, absolute (Gbit/s per ms) and relative to
   the protocol's mean throughput (the fraction it loses per 10 ms); ours = HTTPS-TPC's
   relative slope minus GridFTP's (percentage points per 10 ms), resampling the pairs both
   measured. Paper: the same slope (a difference of 0; a ratio would be undefined near a
   flat slope). The verdict uses the relative slopes: a protocol 20% faster everywhere has
   a 20% steeper absolute slope and is no more sensitive to latency; the absolute slopes
   and their ratio are reported beside.
Measurements outside a campaign join no cell of 1 and 2; every one counts in 3.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from statistics import fmean

from webapp.results.choices import Protocol
from webapp.results.models import Measurement
from webapp.results.selectors.aggregates import throughput_vs_latency

PAPER_HTTPS_OVER_GRIDFTP = 1.20
PAPER_SINGLE_OVER_MULTI = 1.0  # at least
PAPER_SLOPE_DIFFERENCE = 0.0  # percentage points per 10 ms
SINGLE, MULTI = 1, 8
MIN_CELLS = 3
EVERYTHING = "3650d"  # the longest window the selectors take: everything stored
ROUNDING = 1e-9  # relative: what floating point may add to an exact ratio
AGREES, DISAGREES, TOO_FEW = "agrees", "disagrees", "too few data"
EQUAL, AT_LEAST = "equal", "at least"
PROTOCOL_NAMES = {Protocol.HTTPS: "HTTPS-TPC", Protocol.GRIDFTP: "GridFTP"}


@dataclass(frozen=True)
class Row:
    """One measurement's part in the findings."""

    campaign: int | None
    src: int
    dst: int
    protocol: str
    streams: int
    auth: str
    client: str
    checksum: str
    throughput_gbps: float
    rtt_ms: float | None


@dataclass
class Finding:
    """One comparison: the paper's figure, ours with its interval, how many cells, a verdict.

    `rule`: EQUAL (the interval contains the paper's value) or AT_LEAST (the interval
    reaches the paper's value or lies above it). `details`: what else goes with it (for 3,
    each protocol's slopes and the ratio of the absolute ones)."""

    number: int
    key: str
    title: str
    paper: float
    paper_text: str
    rule: str
    ours: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    cells: int = 0
    unit: str = "cells"
    scale: str = "x"  # "x": a ratio; "pp": percentage points of the mean per 10 ms of RTT
    verdict: str = TOO_FEW
    details: dict = field(default_factory=dict)

    def judge(self) -> Finding:
        if self.cells < MIN_CELLS or self.ours is None or self.ci_low is None:
            self.verdict = TOO_FEW
            return self
        # Rounding: a ratio that is exactly the paper's may come out a few ulps off.
        slack = ROUNDING * max(abs(self.paper), 1.0)
        reaches = self.ci_high >= self.paper - slack
        if self.rule == AT_LEAST:
            self.verdict = AGREES if reaches else DISAGREES
        else:
            inside = reaches and self.ci_low <= self.paper + slack
            self.verdict = AGREES if inside else DISAGREES
        return self

    def to_json(self) -> dict:
        return asdict(self)


def measurement_rows(campaigns: tuple[str, ...] = ()) -> list[Row]:
    """The measurements with a throughput (of `campaigns`, uuids, when given): one query."""
    queryset = Measurement.objects.filter(throughput_gbps__isnull=False)
    if campaigns:
        queryset = queryset.filter(campaign__uuid__in=campaigns)
    columns = ("campaign_id", "src_id", "dst_id", "protocol", "streams", "auth", "client",
               "checksum", "throughput_gbps", "rtt_ms")  # fmt: skip
    return [Row(*values) for values in queryset.order_by().values_list(*columns)]


def _estimate(finding: Finding, statistic, samples) -> Finding:
    """Fill `ours` and the interval from the samples (when there are enough), then judge."""
    from webapp.results.bootstrap import estimate  # numpy and scipy: the report's only

    finding.cells = len(samples[0])
    if finding.cells >= MIN_CELLS:
        finding.ours, finding.ci_low, finding.ci_high = estimate(statistic, samples)
    return finding.judge()


def https_versus_gridftp(rows: list[Row]) -> Finding:
    """Finding 1: mean HTTPS-TPC / mean GridFTP over cells that measured both."""
    from webapp.results.bootstrap import ratio_of_means

    cells: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.campaign is not None and r.protocol in (Protocol.HTTPS, Protocol.GRIDFTP):
            key = (r.campaign, r.src, r.dst, r.streams, r.auth, r.client, r.checksum)
            cells[key][r.protocol].append(r.throughput_gbps)
    both = [c for c in cells.values() if len(c) == 2]
    samples = ([fmean(c[Protocol.HTTPS]) for c in both], [fmean(c[Protocol.GRIDFTP]) for c in both])
    paper = f"HTTPS {PAPER_HTTPS_OVER_GRIDFTP:.2f}x GridFTP"
    finding = Finding(
        1, "https-vs-gridftp", "HTTPS-TPC vs GridFTP", PAPER_HTTPS_OVER_GRIDFTP, paper, EQUAL
    )
    return _estimate(finding, ratio_of_means, samples)


def single_versus_multi(rows: list[Row], protocol: str) -> Finding:
    """Finding 2 for one protocol: mean 1-stream / mean 8-stream over cells that measured both."""
    from webapp.results.bootstrap import ratio_of_means

    cells: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.campaign is not None and r.protocol == protocol and r.streams in (SINGLE, MULTI):
            key = (r.campaign, r.src, r.dst, r.auth, r.client, r.checksum)
            cells[key][r.streams].append(r.throughput_gbps)
    both = [c for c in cells.values() if len(c) == 2]
    samples = ([fmean(c[SINGLE]) for c in both], [fmean(c[MULTI]) for c in both])
    title = f"1 stream vs {MULTI}, {PROTOCOL_NAMES.get(protocol, protocol)}"
    paper = f"1 stream >= {PAPER_SINGLE_OVER_MULTI:.2f}x {MULTI} streams"
    key = f"single-vs-multi-{protocol}"
    finding = Finding(2, key, title, PAPER_SINGLE_OVER_MULTI, paper, AT_LEAST)
    return _estimate(finding, ratio_of_means, samples)


def _pair_points(campaigns: tuple[str, ...]) -> dict[tuple[str, str], dict[str, tuple]]:
    """Figure 7's points, from the latency page's own selector: per pair at 8 streams (X.509,
    native, no checksum step) and protocol, the mean RTT and the mean throughput of its
    measurements."""
    found = throughput_vs_latency(
        protocol=None, streams=MULTI, window=EVERYTHING, campaigns=campaigns
    )
    points: dict[tuple[str, str], dict[str, tuple]] = defaultdict(dict)
    for point in found["points"]:
        pair = (point["src"], point["dst"])
        points[pair][point["protocol"]] = (point["rtt_ms"], point["throughput_gbps"])
    return points


def _with_interval(found: tuple | bool) -> dict | None:
    """bootstrap.estimate's answer as {"value", "ci_low", "ci_high"}; None when not
    estimated (False: too few pairs) or undefined."""
    if not found or found[0] is None:
        return None
    return dict(zip(("value", "ci_low", "ci_high"), found, strict=True))


def _protocol_slopes(pairs: list[dict], protocol: str) -> dict:
    """One protocol's slopes against RTT with their intervals, over the pairs it measured:
    absolute (Gbit/s per ms, Figure 7's line) and relative (fraction of its mean per 10 ms)."""
    from webapp.results.bootstrap import estimate, relative_slope, slope

    points = [p[protocol] for p in pairs if protocol in p]
    rtts, speeds = [rtt for rtt, _ in points], [gbps for _, gbps in points]
    found = {"pairs": len(points), "mean_gbps": fmean(speeds) if speeds else None}
    enough = len(points) >= MIN_CELLS and len(set(rtts)) >= 2
    per_10ms = [r / 10 for r in rtts]
    found["slope_gbps_per_ms"] = _with_interval(enough and estimate(slope, (rtts, speeds)))
    found["relative_per_10ms"] = _with_interval(
        enough and estimate(relative_slope, (per_10ms, speeds))
    )
    return found


def latency_sensitivity(campaigns: tuple[str, ...] = ()) -> Finding:
    """Finding 3: HTTPS-TPC's relative slope against RTT minus GridFTP's (percentage points
    of the mean per 10 ms), resampling the pairs that both measured at 8 streams."""
    from webapp.results.bootstrap import estimate, relative_slope_difference, slope_ratio

    pairs = list(_pair_points(campaigns).values())
    https, gridftp = Protocol.HTTPS, Protocol.GRIDFTP
    both = [p for p in pairs if https in p and gridftp in p]
    samples = tuple(
        [p[protocol][index] * scale for p in both]
        for protocol in (https, gridftp)
        for index, scale in ((0, 0.1), (1, 1.0))
    )  # RTTs (in units of 10 ms) and throughputs of HTTPS, then of GridFTP
    title = f"latency sensitivity, {MULTI} streams"
    paper = "same slope, difference 0"
    finding = Finding(
        3, "latency-slope", title, PAPER_SLOPE_DIFFERENCE, paper, EQUAL, unit="pairs", scale="pp"
    )
    finding.details = {p: _protocol_slopes(pairs, p) for p in (https, gridftp)}
    if len(set(samples[0])) < 2 or len(set(samples[2])) < 2:  # one RTT: no slope
        finding.cells = len(both)
        return finding.judge()
    enough = len(both) >= MIN_CELLS
    finding.details["absolute_ratio"] = _with_interval(enough and estimate(slope_ratio, samples))

    def points_per_10ms(xa, a, xb, b, axis=-1):  # the difference in percentage points
        return 100 * relative_slope_difference(xa, a, xb, b, axis=axis)

    return _estimate(finding, points_per_10ms, samples)


@dataclass
class Findings:
    """All of them, with what they were computed from."""

    measurements: int
    with_failures: int
    campaigns: int
    findings: list[Finding]


def paper_findings(campaigns: tuple[str, ...] = ()) -> Findings:
    """The three findings (2 once per protocol) over the measurements of `campaigns`, or all."""
    rows = measurement_rows(campaigns)
    failed = Measurement.objects.filter(throughput_gbps__isnull=False, failed__gt=0)
    if campaigns:
        failed = failed.filter(campaign__uuid__in=campaigns)
    return Findings(
        measurements=len(rows),
        with_failures=failed.count(),
        campaigns=len({r.campaign for r in rows if r.campaign is not None}),
        findings=[
            https_versus_gridftp(rows),
            single_versus_multi(rows, Protocol.HTTPS),
            single_versus_multi(rows, Protocol.GRIDFTP),
            latency_sensitivity(campaigns),
        ],
    )

"""`paper_report`'s printed lines: each of the paper's findings beside ours, in columns, and
what goes with finding 3 (the slopes). docs/dashboard.md and the closing notes quote them."""

from __future__ import annotations

from webapp.results.bootstrap import CONFIDENCE, RESAMPLES, SEED
from webapp.results.selectors.paper_findings import (
    MIN_CELLS,
    PROTOCOL_NAMES,
    TOO_FEW,
    Finding,
    Findings,
)

PAPER = "Fajardo et al., 'Systematic benchmarking of HTTPS third party copy on 100Gbps links'"


def header(found: Findings) -> str:
    return (
        f"The paper's findings against ours: {found.measurements} measurements with a "
        f"throughput in {found.campaigns} campaign{'s' if found.campaigns != 1 else ''} "
        f"({found.with_failures} with failed transfers); {CONFIDENCE:.0%} BCa bootstrap "
        f"intervals, {RESAMPLES} resamples, seed {SEED}.\nPaper: {PAPER}."
    )


def ours_text(finding: Finding) -> str:
    """'0.91x [0.85, 0.97] (95% CI, 48 cells)', or why there is no figure."""
    if finding.verdict == TOO_FEW:
        have = f"{finding.cells} {finding.unit}"
        if finding.cells >= MIN_CELLS:  # enough cells, but one RTT: no slope
            return f"- ({have}, all at one RTT: no slope)"
        return f"- ({have}; at least {MIN_CELLS} needed)"
    if finding.scale == "pp":  # a difference of relative slopes
        figures = f"{finding.ours:+.1f} pp [{finding.ci_low:+.1f}, {finding.ci_high:+.1f}]"
    else:
        figures = f"{finding.ours:.2f}x [{finding.ci_low:.2f}, {finding.ci_high:.2f}]"
    return f"{figures} ({CONFIDENCE:.0%} CI, {finding.cells} {finding.unit})"


def finding_lines(findings: list[Finding]) -> list[str]:
    """One line per finding, in aligned columns, and finding 3's slopes under it:
    `1. HTTPS-TPC vs GridFTP   paper: HTTPS 1.20x GridFTP   ours: 0.91x [0.85, 0.97] (95% CI,
    48 cells)   disagrees`."""
    labels = [f"{f.number}. {f.title}" for f in findings]
    papers = [f"paper: {f.paper_text}" for f in findings]
    ours = [f"ours: {ours_text(f)}" for f in findings]
    widths = [max(len(text) for text in column) for column in (labels, papers, ours)]
    lines = []
    for finding, *columns in zip(findings, labels, papers, ours, strict=True):
        cells = [text.ljust(width) for text, width in zip(columns, widths, strict=True)]
        lines.append("   ".join([*cells, finding.verdict]))
        if finding.key == "latency-slope":
            lines.extend(slope_lines(finding))
    return lines


def _interval(found: dict | None, scale: float = 1.0, digits: int = 4, unit: str = "") -> str:
    """'-4.1% [-6.0%, -2.2%]': a value with its interval, each end with its unit."""
    if not found:
        return "-"
    value, low, high = (
        None if found[k] is None else found[k] * scale for k in ("value", "ci_low", "ci_high")
    )
    text = f"{value:.{digits}f}{unit}"
    if low is None or high is None:
        return text
    return f"{text} [{low:.{digits}f}{unit}, {high:.{digits}f}{unit}]"


def _flat(found: dict | None) -> bool:
    """Whether a slope's interval reaches 0: no dependence on RTT shown."""
    return bool(found) and found["ci_low"] is not None and found["ci_low"] <= 0 <= found["ci_high"]


def slope_lines(finding: Finding) -> list[str]:
    """Finding 3's slopes: relative (what the verdict compares) and absolute (Figure 7's)."""
    lines = []
    flat = []
    for protocol in ("https", "gridftp"):
        slopes = finding.details.get(protocol) or {}
        name = PROTOCOL_NAMES[protocol]
        mean = slopes.get("mean_gbps")
        mean_text = f"{mean:.3g} Gbit/s" if mean is not None else "-"
        relative = slopes.get("relative_per_10ms")
        if _flat(relative):
            flat.append(name)
        lines.append(
            f"   {name + ':':<10} {_interval(relative, 100, 1, '%')} of its mean ({mean_text}) "
            f"per 10 ms of RTT; {_interval(slopes.get('slope_gbps_per_ms'))} Gbit/s per ms "
            f"({slopes.get('pairs', 0)} pairs)"
        )
    absolute = _interval(finding.details.get("absolute_ratio"), digits=2, unit="x")
    lines += [
        "   pp: percentage points of the mean per 10 ms, HTTPS-TPC's relative slope minus",
        "   GridFTP's. The verdict compares the relative slopes: a protocol faster everywhere",
        "   has a steeper absolute slope without being more sensitive. Ratio of the absolute",
        f"   slopes (Figure 7's lines), HTTPS-TPC/GridFTP: {absolute}.",
    ]
    if flat:
        whose = "Both slopes' intervals include" if len(flat) == 2 else f"{flat[0]}'s includes"
        lines.append(f"   {whose} 0 (no loss with RTT shown), so that ratio says little.")
    return lines

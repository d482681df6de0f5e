"""The paper's Figures 3, 4, 5, 7 and 8 as the dashboard draws them, for `paper_report`:
the same figure functions (`plots`, `prelim`) fed by the same selectors as the pages, over
everything stored (or the campaigns asked for) instead of a page's window."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from webapp.dashboard import plots, prelim
from webapp.results.choices import PrelimKind, Protocol
from webapp.results.selectors.aggregates import stream_comparison, throughput_vs_latency
from webapp.results.selectors.baselines import pair_baselines
from webapp.results.selectors.pairs import pair_first_started, pair_series
from webapp.results.selectors.paper_findings import EVERYTHING
from webapp.results.selectors.prelim_runs import prelim_runs

LATENCY_STREAMS = 8  # Figure 7: the latency page's default
# Link baselines a campaign takes just before a pair's measurements: reach back for them.
BASELINE_LEAD = timedelta(hours=1)


@dataclass(frozen=True)
class PaperFigure:
    """One figure to save as <stem>.png and <stem>.svg: its Plotly figure, or why none."""

    stem: str
    title: str
    figure: dict | None
    reason: str = ""


def _prelim(kind: str, stem: str, title: str, command: str) -> PaperFigure:
    runs = prelim_runs(kind=kind, limit=1)
    if not runs:
        return PaperFigure(stem, title, None, f"no `{command}` run stored")
    run = runs[0]
    figure = prelim.FIGURES[kind](run)
    return PaperFigure(stem, f"{title} \u2014 {figure['layout']['title']['text']}", figure)


def pair_history_figure(src: str, dst: str, campaigns: tuple[str, ...] = ()) -> PaperFigure:
    """Figure 5: the pair page's history, with the link baselines, since the pair's first
    measurement (of the campaigns asked for)."""
    stem, title = f"fig5-pair-{src}-{dst}", f"Figure 5: {src} \u2192 {dst} over time"
    first = pair_first_started(src=src, dst=dst, campaigns=campaigns)
    if first is None:
        return PaperFigure(stem, title, None, f"no measurement of {src} -> {dst}")
    series = pair_series(src=src, dst=dst, since=first)
    baselines = pair_baselines(src=src, dst=dst, since=first - BASELINE_LEAD)
    return PaperFigure(stem, title, plots.history_figure(series, baselines))


def latency_figure(campaigns: tuple[str, ...] = ()) -> PaperFigure:
    """Figure 7: the latency page's scatter and fits at 8 streams, every protocol."""
    stem = "fig7-latency"
    title = f"Figure 7: throughput versus RTT, {LATENCY_STREAMS} streams"
    result = throughput_vs_latency(
        protocol=None, streams=LATENCY_STREAMS, window=EVERYTHING, campaigns=campaigns
    )
    if not result["points"]:
        return PaperFigure(stem, title, None, "no measurement with an RTT at 8 streams")
    return PaperFigure(stem, title, plots.latency_figure(result))


def streams_figure(campaigns: tuple[str, ...] = ()) -> PaperFigure:
    """Figure 8: the streams page's scatter, every protocol with pairs measured both ways."""
    stem, title = "fig8-streams", "Figure 8: one stream versus multi-stream, per pair"
    results = [
        stream_comparison(protocol=protocol, window=EVERYTHING, campaigns=campaigns)
        for protocol in Protocol.values
    ]
    results = [r for r in results if r.get("pairs")]
    figure = plots.streams_figure(results) if results else None
    if not figure or not figure["data"]:
        return PaperFigure(stem, title, None, "no pair measured with both 1 and more streams")
    return PaperFigure(stem, title, figure)


def paper_figures(pair: tuple[str, str] | None, campaigns: tuple[str, ...] = ()) -> list:
    """Figures 3, 4, 5 (of `pair`; none without one), 7 and 8, in that order."""
    fig5 = (
        pair_history_figure(*pair, campaigns)
        if pair
        else PaperFigure("fig5-pair", "Figure 5", None, "no measurement stored")
    )
    return [
        _prelim(PrelimKind.CONCURRENCY, "fig3-concurrency", "Figure 3",
                "tpcbench prelim concurrency"),
        _prelim(PrelimKind.FILESIZE, "fig4-filesize", "Figure 4", "tpcbench prelim filesize"),
        fig5,
        latency_figure(campaigns),
        streams_figure(campaigns),
    ]  # fmt: skip

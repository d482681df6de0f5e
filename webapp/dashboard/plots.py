"""Plotly figure specifications (plain dicts) built from the `results` selectors' data.

The browser only calls `Plotly.newPlot(el, figure.data, figure.layout)`; what is drawn
is decided here, where it can be tested without a browser.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from statistics import median
from typing import Any

from webapp.results.choices import DIMENSION_CHOICES, DIMENSION_DEFAULTS
from webapp.results.phases import phase_names

# Okabe-Ito colours (colour-blind safe), one per protocol; RTT in neutral grey.
# Phases, in the order they happen: setup in yellow, black (following a redirector to the data
# server: Okabe-Ito's last colour), blues and grey, data flowing in green, the ending in
# orange and purple, the checksum step after the copy in vermillion.
PHASE_COLOURS = {
    "authorize": "#F0E442",
    "redirect": "#000000",
    "connect": "#56B4E9",
    "handshake": "#0072B2",
    "request": "#999999",
    "streaming": "#009E73",
    "poll": "#E69F00",
    "close": "#CC79A7",
    "checksum": "#D55E00",
}
PROTOCOL_COLOURS = {"https": "#0072B2", "gridftp": "#D55E00", "root": "#009E73"}
RTT_COLOUR = "#555555"
BASELINE_COLOUR = "#000000"  # the link's own figure: black, dashed
FALLBACK_COLOUR = "#000000"

BASE_LAYOUT: dict[str, Any] = {
    "margin": {"l": 70, "r": 70, "t": 30, "b": 60},
    "legend": {"orientation": "h", "y": -0.2},
    "hovermode": "closest",
    "paper_bgcolor": "#ffffff",
    "plot_bgcolor": "#ffffff",
    "font": {"family": "system-ui, sans-serif", "size": 13},
}


def colour(protocol: str) -> str:
    return PROTOCOL_COLOURS.get(protocol, FALLBACK_COLOUR)


def _iso(value: datetime | str | None) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


def baseline_trace(baselines: list[dict], until: str | None = None) -> dict | None:
    """The link baselines as a reference line (the paper's Figure 5): each holds until the
    next, the last one until `until` (the latest measurement); None without any."""
    measured = [b for b in baselines if b.get("throughput_gbps") is not None]
    if not measured:
        return None
    first = measured[0]
    x = [_iso(b["started"]) for b in measured]
    y = [b["throughput_gbps"] for b in measured]
    if until is not None and until > (x[-1] or ""):
        x.append(until)
        y.append(y[-1])
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": f"link baseline ({first.get('tool', 'iperf3')}, {first.get('streams', 8)} streams)",
        "x": x,
        "y": y,
        "hovertemplate": "%{x}<br>the link carried %{y:.2f} Gbps<extra></extra>",
        "line": {"color": BASELINE_COLOUR, "dash": "dash", "shape": "hv"},
        "marker": {"color": BASELINE_COLOUR, "symbol": "triangle-up", "size": 7},
    }


def history_figure(history: list[dict], baselines: list[dict] | None = None) -> dict:
    """Throughput per (protocol, streams) over time, the link baseline as a reference line
    when one was taken (Figure 5), and RTT on a second y axis."""
    series: dict[tuple[tuple[str, ...], int], list[dict]] = defaultdict(list)
    for row in history:
        series[(dimensions_of(row), int(row["streams"]))].append(row)
    traces: list[dict] = []
    for (dimensions, streams), rows in sorted(
        series.items(), key=lambda kv: (dimension_order(*kv[0][0]), -kv[0][1])
    ):
        protocol = dimensions[0]
        rows.sort(key=lambda r: _iso(r["started"]) or "")
        label = dimension_label(*dimensions)
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{label}, {streams} stream{'s' if streams != 1 else ''}",
                "x": [_iso(r["started"]) for r in rows],
                "y": [r.get("throughput_gbps") for r in rows],
                "customdata": [
                    [r.get("succeeded", 0), r.get("succeeded", 0) + r.get("failed", 0)]
                    for r in rows
                ],
                "hovertemplate": "%{x}<br>%{y:.2f} Gbps<br>%{customdata[0]}/%{customdata[1]}"
                " transfers succeeded<extra>%{fullData.name}</extra>",
                "line": {"color": colour(protocol), "dash": "solid" if streams > 1 else "dot"},
                "marker": {
                    "color": colour(protocol),
                    "symbol": [
                        "x" if r.get("failed") else ("circle" if streams > 1 else "square")
                        for r in rows
                    ],
                    "size": 7,
                },
            }
        )
    latest = max((_iso(r["started"]) or "" for r in history), default=None)
    reference = baseline_trace(baselines or [], latest)
    if reference is not None:
        traces.append(reference)
    rtt_rows = sorted(
        (r for r in history if r.get("rtt_ms") is not None), key=lambda r: _iso(r["started"])
    )
    if rtt_rows:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "RTT (ms, right axis)",
                "x": [_iso(r["started"]) for r in rtt_rows],
                "y": [r["rtt_ms"] for r in rtt_rows],
                "yaxis": "y2",
                "hovertemplate": "%{x}<br>RTT %{y:.2f} ms<extra></extra>",
                "marker": {"color": RTT_COLOUR, "symbol": "diamond-open", "size": 6},
            }
        )
    layout = {
        **BASE_LAYOUT,
        "xaxis": {"title": {"text": "measurement start (UTC)"}, "type": "date"},
        "yaxis": {"title": {"text": "throughput (Gbit/s)"}, "rangemode": "tozero"},
        "yaxis2": {
            "title": {"text": "RTT (ms)"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "tickmode": "auto",
            "tickformat": ".3~g",  # 0.03 ms on a LAN and 150 ms on a WAN both read right
            "showgrid": False,
        },
    }
    return {"data": traces, "layout": layout}


def latency_figure(result: dict) -> dict:
    """Throughput versus RTT per pair, one colour per protocol, with its least-squares line.

    `result` is a `throughput_vs_latency` answer (points carry their protocol).
    """
    by_protocol: dict[str, list[dict]] = defaultdict(list)
    for point in result.get("points") or []:
        by_protocol[point.get("protocol") or result["protocol"]].append(point)
    streams = result.get("streams")
    traces: list[dict] = []
    for protocol, points in sorted(by_protocol.items()):
        label = dimension_label(*dimensions_of({**result, "protocol": protocol}))
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{label}, {streams} streams" if streams else label,
                "x": [p["rtt_ms"] for p in points],
                "y": [p["throughput_gbps"] for p in points],
                "text": [f"{p['src']} \u2192 {p['dst']}" for p in points],
                "customdata": [p.get("measurements", 0) for p in points],
                "hovertemplate": "%{text}<br>RTT %{x:.2f} ms<br>%{y:.2f} Gbps"
                "<br>%{customdata} measurements<extra></extra>",
                "marker": {"color": colour(protocol), "size": 8, "opacity": 0.8},
            }
        )
        fit = (result.get("fits") or {}).get(protocol)
        if fit and fit.get("slope_gbps_per_ms") is not None:
            xs = [p["rtt_ms"] for p in points]
            x0, x1 = min(xs), max(xs)
            slope, intercept = fit["slope_gbps_per_ms"], fit["intercept_gbps"]
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{protocol} fit: {fit_label(fit)}",
                    "x": [x0, x1],
                    "y": [intercept + slope * x0, intercept + slope * x1],
                    "hoverinfo": "name",
                    "line": {"color": colour(protocol), "width": 2, "dash": "dash"},
                }
            )
    layout = {
        **BASE_LAYOUT,
        "xaxis": {"title": {"text": "round-trip time (ms)"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "mean throughput (Gbit/s)"}, "rangemode": "tozero"},
    }
    return {"data": traces, "layout": layout}


def fit_label(fit: dict) -> str:
    if fit.get("slope_gbps_per_ms") is None:
        return f"no fit (n = {fit.get('n', 0)}: needs two pairs with different RTTs)"
    r = fit.get("r")
    r_text = "n/a" if r is None else f"{r:.3f}"
    return (
        f"slope {fit['slope_gbps_per_ms']:.4f} Gbps/ms, intercept {fit['intercept_gbps']:.2f}"
        f" Gbps, r = {r_text}, n = {fit.get('n', 0)}"
    )


def streams_figure(results: list[dict]) -> dict:
    """Single- versus multi-stream throughput per pair, with the y = x line."""
    traces: list[dict] = []
    top = 0.0
    for result in results:
        protocol = result["protocol"]
        pairs = [
            p
            for p in result.get("pairs") or []
            if p.get("single_gbps") is not None and p.get("multi_gbps") is not None
        ]
        if not pairs:
            continue
        top = max(top, *(p["single_gbps"] for p in pairs), *(p["multi_gbps"] for p in pairs))
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": dimension_label(*dimensions_of(result)),
                "x": [p["single_gbps"] for p in pairs],
                "y": [p["multi_gbps"] for p in pairs],
                "text": [
                    f"{p['src']} \u2192 {p['dst']}<br>{p.get('multi_streams', '')} streams / 1:"
                    f" ratio {p['ratio']:.2f}"
                    if p.get("ratio") is not None
                    else f"{p['src']} \u2192 {p['dst']}"
                    for p in pairs
                ],
                "hovertemplate": "%{text}<br>1 stream %{x:.2f} Gbps<br>multi %{y:.2f} Gbps"
                "<extra></extra>",
                "marker": {"color": colour(protocol), "size": 8, "opacity": 0.8},
            }
        )
    if traces:
        edge = top * 1.05 or 1.0
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "y = x (streams make no difference)",
                "x": [0, edge],
                "y": [0, edge],
                "hoverinfo": "skip",
                "line": {"color": "#777777", "dash": "dot"},
            }
        )
    layout = {
        **BASE_LAYOUT,
        "xaxis": {"title": {"text": "1 stream: mean throughput (Gbit/s)"}, "rangemode": "tozero"},
        "yaxis": {
            "title": {"text": "multi-stream: mean throughput (Gbit/s)"},
            "rangemode": "tozero",
        },
    }
    return {"data": traces, "layout": layout}


def ratio_summary(result: dict) -> dict:
    """Mean and median multi/single ratio of one protocol's pairs."""
    ratios = sorted(p["ratio"] for p in result.get("pairs") or [] if p.get("ratio") is not None)
    if not ratios:
        return {"protocol": result["protocol"], "n": 0, "mean": None, "median": None}
    mid = len(ratios) // 2
    median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    return {
        "protocol": result["protocol"],
        "n": len(ratios),
        "mean": sum(ratios) / len(ratios),
        "median": median,
    }


def dimensions_of(row: dict) -> tuple[str, ...]:
    """(protocol, auth, client, checksum) of a measurement row, a missing one at its default."""
    defaults = DIMENSION_DEFAULTS.items()
    return (row["protocol"], *(row.get(name) or default for name, default in defaults))


def dimension_order(protocol: str, *dimensions: str) -> tuple:
    """Sort key of (protocol, auth, client, checksum): by protocol, then each dimension's
    values in the order of its choices (the default first), unknown ones after them."""
    key: list = [protocol]
    for value, choices in zip(dimensions, DIMENSION_CHOICES.values(), strict=False):
        values = choices.values
        key += [values.index(value) if value in values else len(values), value]
    return tuple(key)


def dimension_label(protocol: str, *dimensions: str) -> str:
    """'https' for the defaults, else 'https, token, gfal2, adler32' (only what differs)."""
    extra = [
        value
        for value, default in zip(dimensions, DIMENSION_DEFAULTS.values(), strict=False)
        if value != default
    ]
    return ", ".join([protocol, *extra])


def phases_figure(measurements: list[dict]) -> dict | None:
    """Where the time goes: per (protocol, auth, client, checksum), the median seconds of each
    phase over the successful transfers of `measurements` (rows with transfers), stacked in
    the order the phases happen. None when no transfer recorded phases."""
    groups: dict[tuple[str, ...], list[dict]] = defaultdict(list)
    for m in measurements:
        groups[dimensions_of(m)].extend(
            t["phases"]
            for t in m.get("transfers") or []
            if t["outcome"] == "success" and t.get("phases")
        )
    ordered = sorted(groups.items(), key=lambda kv: dimension_order(*kv[0]))
    groups = {key: phases for key, phases in ordered if phases}
    if not groups:
        return None
    labels = [dimension_label(*key) for key in groups]
    names = phase_names(name for phases in groups.values() for p in phases for name in p)
    traces = [
        {
            "type": "bar",
            "orientation": "h",
            "name": name,
            "y": labels,
            "x": [median(p.get(name, 0.0) for p in phases) for phases in groups.values()],
            "customdata": [len(phases) for phases in groups.values()],
            "hovertemplate": f"{name}: %{{x:.3f}} s (median of %{{customdata}} transfers)"
            "<extra>%{y}</extra>",
            "marker": {"color": PHASE_COLOURS.get(name, FALLBACK_COLOUR)},
        }
        for name in names
    ]
    layout = {
        **BASE_LAYOUT,
        "barmode": "stack",
        # above the bars, in the order the phases happen: a short figure has no room below
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom",
                   "traceorder": "normal"},
        "height": 160 + 40 * len(labels),
        "margin": {**BASE_LAYOUT["margin"], "l": 150, "t": 40},
        "xaxis": {"title": {"text": "median seconds per phase (successful transfers)"},
                  "rangemode": "tozero"},
        "yaxis": {"automargin": True, "autorange": "reversed"},
    }  # fmt: skip
    return {"data": traces, "layout": layout}

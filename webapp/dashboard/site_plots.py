"""The Sites page's figures (issue 23): per site pair, protocol and stream setting, the
aggregate throughput against the number of hosts (the scaling sweep's points) and the ideal
line, m x one host's. Plain Plotly dicts, drawn by plots.js as the other pages' are."""

from __future__ import annotations

from collections import defaultdict

from webapp.dashboard.plots import BASE_LAYOUT, colour

IDEAL_COLOUR = "#555555"


def scaling_groups(points: list[dict]) -> list[dict]:
    """The site_scaling points grouped per (src_site, dst_site, protocol, streams), in the
    selector's order, each with an id, a title and its figure."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for point in points:
        key = (point["src_site"], point["dst_site"], point["protocol"], point["streams"])
        groups[key].append(point)
    found = []
    for i, ((src, dst, protocol, streams), rows) in enumerate(groups.items()):
        title = f"{src} \u2192 {dst} \u00b7 {protocol} \u00b7 {streams} stream" + (
            "s" if streams != 1 else ""
        )
        found.append(
            {
                "id": f"scaling-{i}",
                "title": title,
                "src_site": src,
                "dst_site": dst,
                "protocol": protocol,
                "streams": streams,
                "points": rows,
                "figure": scaling_figure(rows, protocol),
            }
        )
    return found


def scaling_figure(rows: list[dict], protocol: str) -> dict:
    """Measured aggregate throughput per host count, and the ideal m x one host's (dashed)
    when the sweep has a one-host point."""
    hosts = [r["hosts"] for r in rows]
    traces: list[dict] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "measured (mean of the sweep's points)",
            "x": hosts,
            "y": [r["throughput_gbps"] for r in rows],
            "customdata": [[r["measurements"], r["efficiency"]] for r in rows],
            "hovertemplate": "%{x} hosts<br>%{y:.2f} Gbps<br>%{customdata[0]} measurements"
            "<br>efficiency %{customdata[1]:.2f}<extra></extra>",
            "line": {"color": colour(protocol)},
            "marker": {"color": colour(protocol), "size": 8},
        }
    ]
    ideal = [r for r in rows if r["ideal_gbps"] is not None]
    if ideal:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "ideal: hosts \u00d7 one host's",
                "x": [r["hosts"] for r in ideal],
                "y": [r["ideal_gbps"] for r in ideal],
                "hovertemplate": "%{x} hosts<br>ideal %{y:.2f} Gbps<extra></extra>",
                "line": {"color": IDEAL_COLOUR, "dash": "dash"},
            }
        )
    layout = {
        **BASE_LAYOUT,
        # A short plot (.plot-scaling): the legend below the axis title, not on it.
        "margin": {**BASE_LAYOUT["margin"], "b": 100},
        "legend": {**BASE_LAYOUT["legend"], "y": -0.35},
        "xaxis": {"title": {"text": "hosts"}, "dtick": 1, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "aggregate throughput (Gbit/s)"}, "rangemode": "tozero"},
    }
    return {"data": traces, "layout": layout}

"""The dashboard pages. Thin: read through `results` selectors, shape with grid/plots."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from webapp.dashboard import plots
from webapp.dashboard.dimensions import (
    chosen_dimensions,
    dimension_filters,
    dimension_links,
    dimensions_text,
    measured_values,
    not_default,
)
from webapp.dashboard.grid import grid_page_data
from webapp.dashboard.grid_layout import filter_terms
from webapp.dashboard.history import (
    RECENT_MEASUREMENTS,
    checksum_costs,
    latest_per_check,
    recent_measurements,
    servers_known,
    with_link_fraction,
    with_phase_summaries,
)
from webapp.dashboard.notes import buffer_note_context
from webapp.results.choices import Protocol
from webapp.results.grid.ages import format_age, normal_period
from webapp.results.grid.queries import grid_dimensions
from webapp.results.selectors.aggregates import stream_comparison, throughput_vs_latency
from webapp.results.selectors.baselines import pair_baselines
from webapp.results.selectors.campaigns import latest_campaign
from webapp.results.selectors.measurements import measurements_exist, missing_nodes
from webapp.results.selectors.pairs import pair_measurements, pair_series
from webapp.results.windows import parse_window

# The windows every page offers, as (value for ?window=, label).
WINDOWS = (
    ("latest", "Latest campaign"),
    ("24h", "24 h"),
    ("7d", "7 d"),
    ("20d", "20 d average"),
)
PROTOCOLS = tuple(Protocol.values)
STREAM_CHOICES = (8, 1)
HISTORY_DAYS = (7, 20, 90)
DEFAULT_HISTORY_DAYS = 20

MEASUREMENTS_API = "/api/v1/measurements/"
_TABLE_MARKER = re.compile(r"(<!--grid-table-\d+-->)")


def _window(request: HttpRequest, default: str) -> tuple[str, str | None]:
    """The requested window and, when it does not parse, the reason."""
    value = request.GET.get("window") or default
    try:
        return parse_window(value).label, None  # normalised: "7D" -> "7d"
    except ValueError as exc:
        return value, str(exc)


def _window_links(request: HttpRequest, current: str) -> list[dict]:
    links = []
    for value, label in WINDOWS:
        query = request.GET.copy()
        query["window"] = value
        links.append(
            {
                "value": value,
                "label": label,
                "query": query.urlencode(),
                "current": value == current,
            }
        )
    return links


def _streams(request: HttpRequest) -> int:
    """?streams=N for any sensible N (campaigns may use other settings than 8 and 1)."""
    raw = request.GET.get("streams", "")
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= 1024 else STREAM_CHOICES[0]


def _choice(request: HttpRequest, name: str, choices: tuple, default):
    """A query parameter restricted to `choices` (as strings), else the default."""
    raw = request.GET.get(name)
    for choice in choices:
        if raw == str(choice):
            return choice
    return default


@require_safe
def grid_page(request: HttpRequest) -> HttpResponse:
    window, error = _window(request, "latest")
    dimensions = chosen_dimensions(request)
    context: dict = {
        "nav": "grid",
        "window": window,
        "window_links": _window_links(request, window),
        **dimensions,
        "shown": dimensions_text(dimensions),
        "error": error,
        "sections": [],
    }
    if error:
        context["empty"] = not measurements_exist()
        return render(request, "dashboard/grid.html", context, status=400)
    # One grid per protocol with results of these dimensions; none measured: an empty database.
    terms = filter_terms(request.GET.get("node"))  # the node filter (grid_layout)
    page = grid_page_data(
        window=window,
        **dimensions,
        scope=request.GET.get("scope"),
        sites=request.GET.get("sites", ""),
        node=" ".join(terms),
    )
    sections = page.sections
    context.update(scope=page.scope, sites=page.sites, drilled=page.drilled)
    context.update(node_filter_context(request, terms, page.matched))
    context["period"] = page.period
    context["scope_links"] = scope_links(request, page.scope) if page.sites else []
    context["empty"] = not page.auths
    # Choices only where there is a choice (or the one asked for is not the one measured).
    measured = {"auth": page.auths, "client": page.clients, "checksum": page.checksums}
    context["dimensions"] = dimension_links(request, measured, dimensions)
    if sections:
        context["sections"] = sections
        context["window_has_data"] = any(s.n_measured for s in sections)
        updates = [s.last_update for s in sections if s.last_update]
        context["last_update"] = max(updates) if updates else None
        # Read with the grids (and cached with them): the latest campaign's start.
        context["campaign"] = sections[0].campaign if window == "latest" else None
    return _render_with_tables(request, "dashboard/grid.html", context)


def node_filter_context(request: HttpRequest, terms: list[str], matched: int) -> dict:
    """The node filter's box: its value, the other parameters it keeps (hidden fields), the
    page without it, and how many nodes it matched."""
    kept = [(k, v) for k, values in request.GET.lists() if k != "node" for v in values]
    query = request.GET.copy()
    query.pop("node", None)
    return {
        "node_filter": " ".join(terms),
        "node_filter_kept": kept,
        "node_filter_clear": query.urlencode(),
        "node_matched": matched,
    }


def scope_links(request: HttpRequest, current: str) -> list[dict]:
    """The grid's choice of rows and columns when measurements name sites: sites or hosts
    (the whole host grid: a drill-down's sites dropped)."""
    links = []
    for scope, label in (("site", "Sites"), ("host", "Hosts")):
        query = request.GET.copy()
        query.pop("sites", None)
        query["scope"] = scope
        links.append({"query": query.urlencode(), "label": label, "current": scope == current})
    return links


def _render_with_tables(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    """render(), with each section's table put in after the template has run.

    The tables are most of the page (0.4 MB each for 30 nodes); passed through the template
    engine they would be copied again at every level of its nesting.
    """
    tables = {}
    sections = []
    for index, section in enumerate(context["sections"]):
        marker = f"<!--grid-table-{index}-->"  # cannot occur in escaped content
        tables[marker] = section.table_html
        sections.append(replace(section, table_html=mark_safe(marker)))
    text = render_to_string(template, {**context, "sections": sections}, request)
    parts = _TABLE_MARKER.split(text)
    return HttpResponse("".join(tables.get(part, part) for part in parts))


@require_safe
def pair_page(request: HttpRequest, src: str, dst: str) -> HttpResponse:
    missing = missing_nodes(src, dst)
    if missing:
        return render(
            request,
            "dashboard/pair_not_found.html",
            {"src": src, "dst": dst, "missing": missing},
            status=404,
        )
    days = _choice(request, "days", HISTORY_DAYS, DEFAULT_HISTORY_DAYS)
    since = timezone.now() - timedelta(days=days)
    # The plot and the latest results: the whole window's figures (values only); the
    # transfer table and the phases: only the measurements listed, with their transfers.
    series = pair_series(src=src, dst=dst, since=since)
    baselines = pair_baselines(src=src, dst=dst, since=since)
    latest = latest_per_check(series)
    recent_ids = {row["id"] for row in series[-RECENT_MEASUREMENTS:]}  # series: oldest first
    latest_ids = {row["id"] for row in latest}
    ids = sorted(recent_ids | latest_ids)
    measured = pair_measurements(src=src, dst=dst, ids=ids) if ids else []
    query = {"src": src, "dst": dst, "since": since.isoformat(timespec="seconds")}
    latest = with_phase_summaries(with_link_fraction(latest, baselines), measured)
    latest_measured = [m for m in measured if m["id"] in latest_ids]
    recent = recent_measurements([m for m in measured if m["id"] in recent_ids])
    servers = servers_known(recent)
    context = {
        "nav": "grid",
        "src": src,
        "dst": dst,
        **last_measured(series),
        "days": days,
        "day_choices": HISTORY_DAYS,
        "history": series,
        "figure": plots.history_figure(series, baselines) if series else None,
        "latest": latest,
        # What the page explains under the table: the paper's figure above the link, and a
        # baseline below what the transfers themselves carried.
        "above_link": any(row["above_link"] for row in latest),
        "makespan_above_link": any(row["makespan_above_link"] for row in latest),
        "phases_figure": plots.phases_figure(latest_measured),
        "checksum_costs": checksum_costs(latest_measured),
        "baselines": baselines,
        "recent": recent,
        # Sites' transfers say which data servers served them: a column of its own then.
        "servers_known": servers,
        "transfer_columns": 12 if servers else 11,
        "csv_url": f"{MEASUREMENTS_API}?{urlencode({**query, 'format': 'csv'})}",
        "json_url": f"{MEASUREMENTS_API}?{urlencode(query)}",
        "transfers_csv_url": f"{MEASUREMENTS_API}?"
        + urlencode({**query, "format": "csv", "rows": "transfers"}),
    }
    return render(request, "dashboard/pair.html", context)


def last_measured(series: list[dict]) -> dict:
    """The pair page's age line (issue 24): when its latest measurement finished, how long
    ago, whether that is overdue (results.grid.ages) and the pair's normal period."""
    if not series:
        return {"last_measured": None}
    finished = max(row["finished"] for row in series)
    period = normal_period()
    age = max(0.0, (timezone.now() - finished).total_seconds())
    return {
        "last_measured": finished,
        "last_age": format_age(age),
        "last_overdue": age > period.overdue_after,
        "period": period,
    }


def _plot_dimensions(request: HttpRequest) -> tuple[dict[str, str], dict]:
    """A plot page's dimensions (auth, client, checksum) and what its template shows of
    them: a select for each with a choice, the shown ones in words, whether anything was
    measured (one query, the measured combinations, for all three)."""
    dimensions = chosen_dimensions(request)
    combinations = grid_dimensions()
    return dimensions, {
        "dimension_filters": dimension_filters(measured_values(combinations), dimensions),
        "shown": dimensions_text(dimensions),
        "empty": not combinations,
    }


@require_safe
def latency_page(request: HttpRequest) -> HttpResponse:
    protocol = _choice(request, "protocol", PROTOCOLS, "")
    streams = _streams(request)
    window, error = _window(request, "20d")
    dimensions, dimension_context = _plot_dimensions(request)
    context: dict = {
        "nav": "latency",
        "protocol": protocol,
        "protocols": PROTOCOLS,
        "streams": streams,
        "stream_choices": sorted({*STREAM_CHOICES, streams}, reverse=True),
        "window": window,
        "windows": WINDOWS,
        "error": error,
        **dimension_context,
    }
    if error:
        return render(request, "dashboard/latency.html", context, status=400)
    shown = [protocol] if protocol else list(PROTOCOLS)
    result = throughput_vs_latency(
        protocol=protocol or None, streams=streams, window=window, **dimensions
    )
    context["fits"] = [
        {"protocol": name, **fit, "label": plots.fit_label(fit)}
        for name, fit in result["fits"].items()
    ]
    context["figure"] = plots.latency_figure(result) if result["points"] else None
    context["buffer_note"] = buffer_note_context(
        streams=streams, window=window, protocol=protocol or None, **dimensions
    )
    with_data = [p for p in shown if p in result["fits"]] or shown
    params = {"streams": streams, "window": window}
    context["exports"] = _exports(
        "/api/v1/throughput-vs-latency/", with_data, params, streams, dimensions
    )
    return render(request, "dashboard/latency.html", context)


@require_safe
def streams_page(request: HttpRequest) -> HttpResponse:
    protocol = _choice(request, "protocol", PROTOCOLS, "")
    window, error = _window(request, "20d")
    dimensions, dimension_context = _plot_dimensions(request)
    context: dict = {
        "nav": "streams",
        "protocol": protocol,
        "protocols": PROTOCOLS,
        "window": window,
        "windows": WINDOWS,
        "error": error,
        **dimension_context,
    }
    if error:
        return render(request, "dashboard/streams.html", context, status=400)
    shown = [protocol] if protocol else list(PROTOCOLS)
    results = [stream_comparison(protocol=p, window=window, **dimensions) for p in shown]
    results = [r for r in results if r.get("pairs")]
    context["results"] = results
    context["summaries"] = [plots.ratio_summary(r) for r in results]
    context["figure"] = plots.streams_figure(results) if results else None
    # One stream is what a buffer limits first: the single-stream points.
    context["buffer_note"] = buffer_note_context(
        streams=1, window=window, protocol=protocol or None, **dimensions
    )
    with_data = [r["protocol"] for r in results] or shown
    context["exports"] = _exports(
        "/api/v1/stream-comparison/", with_data, {"window": window}, None, dimensions
    )
    return render(request, "dashboard/streams.html", context)


def _exports(
    endpoint: str,
    protocols: list[str],
    params: dict,
    streams: int | None,
    dimensions: dict[str, str],
) -> list[dict]:
    """Per protocol: the aggregate endpoint as JSON (the dimensions not at their defaults
    added) and the raw measurements behind it as CSV (every dimension: the list has no
    defaults)."""
    window = parse_window(params["window"])
    params = {**params, **not_default(dimensions)}
    raw_filter: dict = {"format": "csv"}
    if streams is not None:
        raw_filter["streams"] = streams
    if window.duration is not None:
        since = timezone.now() - window.duration
        raw_filter["since"] = since.isoformat(timespec="seconds")
    elif (campaign := latest_campaign()) is not None:
        raw_filter["campaign"] = str(campaign.uuid)
    raw_filter.update(dimensions)
    return [
        {
            "protocol": protocol,
            "json": f"{endpoint}?{urlencode({'protocol': protocol, **params})}",
            "csv": f"{MEASUREMENTS_API}?{urlencode({'protocol': protocol, **raw_filter})}",
        }
        for protocol in protocols
    ]

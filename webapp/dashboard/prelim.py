"""`/plots/prelim/`: what one node's servers can do (the paper's Section 2). The latest
concurrency run as Figure 3 (aggregate throughput against concurrent copies, one line per
method: cp, HTTPS-TPC, GridFTP-TPC) and the latest file size run as Figure 4 (HTTPS-TPC, one
line per file size)."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from webapp.dashboard.plots import BASE_LAYOUT, colour
from webapp.results.choices import PrelimKind
from webapp.results.models import PrelimRun
from webapp.results.selectors.prelim_runs import prelim_runs

METHOD_NAMES = {"cp": "cp (memory to memory)", "https": "HTTPS-TPC", "gridftp": "GridFTP-TPC"}
METHOD_ORDER = ("cp", "https", "gridftp")
CP_COLOUR = "#000000"
# Okabe-Ito, one per file size (Figure 4 has four: 1, 2, 5 and 10 GiB)
SIZE_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442")
RECENT_RUNS = 10


def size_label(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:g} {unit}"
    return f"{size} B"


def _line(name: str, points: list, line_colour: str, dash: str = "solid") -> dict[str, Any]:
    points = sorted(points, key=lambda p: p.concurrency)
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": [p.concurrency for p in points],
        "y": [p.throughput_gbps for p in points],
        "customdata": [[p.succeeded, p.succeeded + p.failed] for p in points],
        "hovertemplate": "%{x} at once: %{y:.2f} Gbps<br>%{customdata[0]}/%{customdata[1]} "
        "copies succeeded<extra>%{fullData.name}</extra>",
        "line": {"color": line_colour, "dash": dash},
        "marker": {"color": line_colour, "size": 7},
    }


def _layout(title: str) -> dict[str, Any]:
    return {
        **BASE_LAYOUT,
        "title": {"text": title, "font": {"size": 14}},
        "xaxis": {"title": {"text": "concurrent copies"}, "dtick": 1, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "aggregate throughput (Gbit/s)"}, "rangemode": "tozero"},
    }


def concurrency_figure(run: PrelimRun) -> dict[str, Any]:
    """Figure 3: one line per method."""
    by_method: dict[str, list] = defaultdict(list)
    for point in run.points.all():
        by_method[point.method].append(point)
    traces = [
        _line(
            METHOD_NAMES.get(method, method),
            by_method[method],
            CP_COLOUR if method == "cp" else colour(method),
            "dot" if method == "cp" else "solid",
        )
        for method in sorted(by_method, key=lambda m: (*METHOD_ORDER, m).index(m))
    ]
    sizes = sorted({p.file_size for p in run.points.all()})
    title = f"{run.node.name}: {', '.join(size_label(s) for s in sizes)} per copy"
    return {"data": traces, "layout": _layout(title)}


def filesize_figure(run: PrelimRun) -> dict[str, Any]:
    """Figure 4: HTTPS-TPC, one line per file size."""
    by_size: dict[int, list] = defaultdict(list)
    for point in run.points.all():
        by_size[point.file_size].append(point)
    traces = [
        _line(size_label(size), points, SIZE_COLOURS[i % len(SIZE_COLOURS)])
        for i, (size, points) in enumerate(sorted(by_size.items()))
    ]
    return {"data": traces, "layout": _layout(f"{run.node.name}: HTTPS-TPC per file size")}


FIGURES = {PrelimKind.CONCURRENCY: concurrency_figure, PrelimKind.FILESIZE: filesize_figure}


def _section(kind: str, runs: list[PrelimRun], chosen: str | None) -> dict[str, Any]:
    of_kind = [r for r in runs if r.kind == kind]
    shown = next((r for r in of_kind if str(r.uuid) == chosen), of_kind[0] if of_kind else None)
    return {
        "kind": kind,
        "figure_id": f"{kind}-figure",
        "title": PrelimKind(kind).label,
        "run": shown,
        "runs": of_kind,
        "figure": FIGURES[kind](shown) if shown else None,
        "failed": [p for p in shown.points.all() if p.failed] if shown else [],
    }


@require_safe
def prelim_page(request: HttpRequest) -> HttpResponse:
    chosen = request.GET.get("run")
    runs = prelim_runs(limit=RECENT_RUNS * 2)
    if chosen and _is_uuid(chosen) and not any(str(r.uuid) == chosen for r in runs):
        runs += prelim_runs(uuid=chosen)  # an older run, asked by name
    sections = [_section(kind, runs, chosen) for kind in PrelimKind.values]
    context = {"nav": "prelim", "sections": sections, "any": any(s["run"] for s in sections)}
    return render(request, "dashboard/prelim.html", context)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True

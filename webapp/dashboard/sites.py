"""The Sites page (issue 23): a site's aggregate throughput against its number of hosts (the
scaling sweep, beside the ideal line) and what each level of the redirector hierarchy
costs (the hop-overhead table, beside STFC's published figure)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from webapp.dashboard.site_plots import scaling_groups
from webapp.results.cache import cached_aggregate
from webapp.results.choices import LookupLevel
from webapp.results.selectors.sites import hop_overhead, site_scaling, sites_measured
from webapp.results.windows import parse_window

WINDOWS = (("latest", "Latest campaign"), ("24h", "24 h"), ("7d", "7 d"), ("20d", "20 d"))
DEFAULT_WINDOW = "20d"
LEVEL_LABELS = dict(LookupLevel.choices)


@cached_aggregate("sites-measured")
def _sites_measured() -> bool:
    return sites_measured()


def sites_navigation(request: HttpRequest) -> dict:
    """A context processor: the dashboard's pages link the Sites page when a measurement
    names a site or a lookup was stored (cached per data version: one query when cached)."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.app_name != "dashboard":
        return {}
    try:
        return {"sites_nav": _sites_measured()}
    except DatabaseError:
        return {"sites_nav": False}


def _window(request: HttpRequest) -> tuple[str, str | None]:
    value = request.GET.get("window") or DEFAULT_WINDOW
    try:
        return parse_window(value).label, None
    except ValueError as exc:
        return value, str(exc)


@require_safe
def sites_page(request: HttpRequest) -> HttpResponse:
    window, error = _window(request)
    links = [
        {
            "label": label,
            "query": urlencode({"window": value}),
            "current": value == window,
        }
        for value, label in WINDOWS
    ]
    context: dict = {"nav": "sites", "window": window, "window_links": links, "error": error}
    if error:
        return render(request, "dashboard/sites.html", context, status=400)
    scaling = site_scaling(window=window)
    overhead = hop_overhead(window=window)
    context["groups"] = scaling_groups(scaling["points"])
    context["levels"] = [
        {**row, "label": LEVEL_LABELS.get(row["level"], row["level"])} for row in overhead["levels"]
    ]
    context["reference"] = overhead["reference"]
    context["exports"] = {
        "scaling": f"/api/v1/site-scaling/?{urlencode({'window': window})}",
        "overhead": f"/api/v1/hop-overhead/?{urlencode({'window': window})}",
        "lookups": "/api/v1/lookups/?format=csv",
        "sweeps": "/api/v1/measurements/?format=csv&sweep=true",
    }
    return render(request, "dashboard/sites.html", context)

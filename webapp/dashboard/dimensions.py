"""The dimensions a page reads one value of at a time (authorization, client, checksum): from
its query string, as links or a form's choices, and in words for its heading.

Each defaults to the value measurements had before it existed (x509, native, none), so a
page without parameters shows what it always showed.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.http import HttpRequest

from webapp.results.choices import DIMENSION_CHOICES, DIMENSION_DEFAULTS

LABELS = {"auth": "Authorization", "client": "Client", "checksum": "Checksum"}
# How a heading says a dimension's value when it is not the default.
_WORDS = {
    "auth": "authorized by {}",
    "client": "driven by {}",
    "checksum": "whose transfers ended with the {} checksum step",
}


def chosen_dimensions(request: HttpRequest) -> dict[str, str]:
    """?auth=, ?client=, ?checksum=: each one of its choices, else its default."""
    chosen = {}
    for name, choices in DIMENSION_CHOICES.items():
        raw = request.GET.get(name)
        chosen[name] = raw if raw in choices.values else DIMENSION_DEFAULTS[name]
    return chosen


def measured_values(combinations: Iterable[tuple[str, ...]]) -> dict[str, list[str]]:
    """Per dimension, the values measured in (protocol, auth, client, checksum) combinations
    (results.grid.queries.grid_dimensions), in the order of its choices."""
    found = list(combinations)
    return {
        name: [v for v in choices.values if any(c[i + 1] == v for c in found)]
        for i, (name, choices) in enumerate(DIMENSION_CHOICES.items())
    }


def offered(measured: dict[str, list[str]], chosen: dict[str, str]) -> list[str]:
    """The dimensions there is a choice of: more than one value measured, or the one asked
    for is not the one measured."""
    return [name for name, values in measured.items() if values and values != [chosen[name]]]


def dimension_links(
    request: HttpRequest, measured: dict[str, list[str]], chosen: dict[str, str]
) -> list[dict]:
    """Per offered dimension: links to each measured value, the other parameters kept."""
    selectors = []
    for name in offered(measured, chosen):
        links = []
        for value in measured[name]:
            query = request.GET.copy()
            query[name] = value
            links.append(
                {"label": value, "query": query.urlencode(), "current": value == chosen[name]}
            )
        selectors.append({"name": name, "label": LABELS[name], "links": links})
    return selectors


def dimension_filters(measured: dict[str, list[str]], chosen: dict[str, str]) -> list[dict]:
    """Per offered dimension: a form's select (name, label, values, current)."""
    return [
        {
            "name": name,
            "label": LABELS[name],
            "values": list(dict.fromkeys([*measured[name], chosen[name]])),
            "current": chosen[name],
        }
        for name in offered(measured, chosen)
    ]


def not_default(chosen: dict[str, str]) -> dict[str, str]:
    """The chosen values that differ from their defaults (what a link needs to carry)."""
    return {name: value for name, value in chosen.items() if value != DIMENSION_DEFAULTS[name]}


def dimensions_text(chosen: dict[str, str]) -> str:
    """The measurements shown, in words, when a dimension is not at its default: 'Measurements
    authorized by token, whose transfers ended with the adler32 checksum step.'; '' else."""
    parts = [_WORDS[name].format(value) for name, value in not_default(chosen).items()]
    return f"Measurements {', '.join(parts)}." if parts else ""

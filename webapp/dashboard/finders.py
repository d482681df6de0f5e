"""Serve Plotly's JavaScript straight from the pinned PyPI `plotly` wheel.

Why Plotly: interactive hover, a second y axis and SVG output without us writing a
charting library, and its minified bundle ships inside the wheel (`plotly==7.1.0` in
pyproject.toml), so nothing is copied into the repository or loaded from a CDN. This
finder exposes only that one file, so `collectstatic` and WhiteNoise pick it up like any
other static file (enable it in STATICFILES_FINDERS).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "vendor/plotly/plotly.min.js"
_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyFinder(BaseFinder):
    """Finds `vendor/plotly/plotly.min.js` in the installed plotly package."""

    def check(self, **kwargs) -> list:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs) -> str | list[str]:
        find_all = find_all or kwargs.get("all", False)
        if path == PLOTLY_STATIC_PATH and (_PACKAGE_DATA / "plotly.min.js").is_file():
            found = str(_PACKAGE_DATA / "plotly.min.js")
            return [found] if find_all else found
        return []

    def list(self, ignore_patterns) -> Iterator[tuple[str, FileSystemStorage]]:
        storage = FileSystemStorage(location=str(_PACKAGE_DATA))
        storage.prefix = PLOTLY_STATIC_PATH.rsplit("/", 1)[0]
        yield "plotly.min.js", storage

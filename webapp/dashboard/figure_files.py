"""The dashboard's Plotly figures saved as PNG and SVG files (`paper_report`), with plotly
and kaleido (the `reproduce` extra), which drives a Chromium: Debian's, unless
BROWSER_PATH names another."""

from __future__ import annotations

import copy
import logging
import os
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
FORMATS = ("png", "svg")
# kaleido and the browser driver it uses narrate every tab at INFO: only their warnings.
QUIET_LOGGERS = ("kaleido", "choreographer", "logistro")
WIDTH, HEIGHT = 1000, 600
TITLE_MARGIN = 70  # room at the top for the title a file carries (a page has its heading)


class FigureFilesError(Exception):
    """The figures could not be written (no browser for kaleido, say): the reason."""


def titled(figure: dict, title: str) -> dict:
    """A copy of `figure` with `title` on top, as a file needs it."""
    exported = copy.deepcopy(figure)
    layout = exported.setdefault("layout", {})
    layout["title"] = {"text": title, "x": 0.02, "xanchor": "left", "font": {"size": 16}}
    margin = dict(layout.get("margin") or {})
    margin["t"] = max(margin.get("t", 0), TITLE_MARGIN)
    layout["margin"] = margin
    return exported


def save_figures(figures: list[tuple[str, str, dict]], out: Path) -> list[Path]:
    """Write each (stem, title, figure) as out/<stem>.png and out/<stem>.svg; the paths, in
    that order. One browser session writes them all."""
    if not figures:
        return []
    if not os.environ.get("BROWSER_PATH") and CHROMIUM.exists():
        os.environ["BROWSER_PATH"] = str(CHROMIUM)  # kaleido's choreographer reads it
    try:
        import plotly.io as pio
    except ImportError as exc:  # pragma: no cover - plotly is a dependency of the webapp
        raise FigureFilesError(f"plotly is missing: {exc}") from exc
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    out.mkdir(parents=True, exist_ok=True)
    images, paths = [], []
    for stem, title, figure in figures:
        exported = titled(figure, title)
        for suffix in FORMATS:
            images.append(exported)
            paths.append(out / f"{stem}.{suffix}")
    try:
        pio.write_images(images, paths, width=WIDTH, height=HEIGHT)
    except Exception as exc:  # kaleido's and the browser's errors have no common base
        raise FigureFilesError(
            f"could not write the figures with kaleido ({type(exc).__name__}: {exc}); it needs "
            "the `reproduce` extra (pip install '.[reproduce]') and a Chromium (apt-get install "
            "chromium, or BROWSER_PATH=/path/to/chrome)"
        ) from exc
    return paths

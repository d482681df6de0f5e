"""What the page tests share: a three-node mesh with known values, and readers of the pages'
grid tables and figures."""

from __future__ import annotations

import json
import re
import uuid as uuid_lib
from datetime import timedelta
from html.parser import HTMLParser

from django.utils import timezone

NODES = ("alpha", "bravo", "charlie")
GIB = 2**30


class GridTables(HTMLParser):
    """Collects every <table class="grid">: its column names and, per row, each cell."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict] = {}
        self._table: dict | None = None
        self._cell: list | None = None
        self._in_col = False
        self._in_row_head = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and "grid" in classes:
            self._table = {"columns": [], "rows": []}
            self.tables[a["data-grid"]] = self._table
        elif self._table is None:
            return
        elif tag == "th" and "col" in classes:
            self._in_col = True
        elif tag == "th" and "row" in classes:
            self._in_row_head = True
            self._table["rows"].append({"name": "", "cells": []})
        elif tag == "td" and "self" in classes:
            self._table["rows"][-1]["cells"].append("self")
        elif tag == "a" and "cell" in classes:
            self._cell = []
            self._table["rows"][-1]["cells"].append(
                {"href": a["href"], "label": a["aria-label"], "bands": self._cell}
            )
        elif tag == "span" and "band" in classes and self._cell is not None:
            self._cell.append(
                {"status": int(a["data-status"]), "classes": classes, "tip": a["data-tip"]}
            )

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag == "th":
            self._in_col = self._in_row_head = False
        elif tag == "a":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._table is None:
            return
        if self._in_col and data.strip():
            self._table["columns"].append(data.strip())
        elif self._in_row_head:
            self._table["rows"][-1]["name"] += data.strip()


def grid_tables(html: str) -> dict[str, dict]:
    parser = GridTables()
    parser.feed(html)
    return parser.tables


def cell(tables: dict, grid: str, src: str, dst: str) -> dict:
    table = tables[grid]
    row = next(r for r in table["rows"] if r["name"] == src)
    return row["cells"][table["columns"].index(dst)]


def figure(html: str, element_id: str) -> dict:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert match, f"no figure {element_id} in the page"
    return json.loads(match.group(1))


def store_mesh(store) -> dict:
    """Three nodes, one campaign: every https pair at 8 and 1 streams, with known values.

    alpha->bravo 8 streams 42 Gbps (OK), 1 stream 12 Gbps (WARNING);
    bravo->alpha 8 streams: every transfer timed out (CRITICAL, failed);
    charlie->alpha 8 streams 5 Gbps (CRITICAL); gridftp only alpha->charlie 8 streams 20 Gbps.
    """
    campaign = uuid_lib.uuid4()
    now = timezone.now().replace(microsecond=0)
    started = now - timedelta(hours=1)
    values = {
        ("alpha", "bravo", 8): 42.0,
        ("alpha", "bravo", 1): 12.0,
        ("charlie", "alpha", 8): 5.0,
    }
    rtts = {
        ("alpha", "bravo"): 10.0,
        ("alpha", "charlie"): 40.0,
        ("bravo", "alpha"): 10.0,
        ("bravo", "charlie"): 60.0,
        ("charlie", "alpha"): 40.0,
        ("charlie", "bravo"): 60.0,
    }
    for src in NODES:
        for dst in NODES:
            if src == dst:
                continue
            for streams in (8, 1):
                failed = 3 if (src, dst, streams) == ("bravo", "alpha", 8) else 0
                gbps = values.get((src, dst, streams), 35.0 if streams == 8 else 15.0)
                store(
                    src=src,
                    dst=dst,
                    protocol="https",
                    streams=streams,
                    gbps=gbps,
                    started=started,
                    failed=failed,
                    campaign=campaign,
                    rtt_ms=rtts[(src, dst)],
                )
    store(
        src="alpha",
        dst="charlie",
        protocol="gridftp",
        streams=8,
        gbps=20.0,
        started=started,
        campaign=campaign,
        rtt_ms=40.0,
    )
    return {"campaign": campaign, "started": started}

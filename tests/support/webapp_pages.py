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


# --- a big mesh, inserted directly (issue 24: the grid at 200 nodes) -----------------------

BIG_SITES = ("ucsd", "unl", "caltech", "mit", "uchicago", "wisc", "fnal", "bnl", "slac", "nersc")


def big_mesh_names(sites: int, per_site: int) -> list[tuple[str, str]]:
    """(name, site) of `sites` x `per_site` nodes: 'ucsd-01' .. in site 'ucsd' .."""
    return [(f"{site}-{i:02d}", site) for site in BIG_SITES[:sites] for i in range(1, per_site + 1)]


def bulk_mesh(
    *,
    sites: int = 10,
    per_site: int = 20,
    skip: tuple[tuple[str, str], ...] = (),
    cycle_fit: dict | None = None,
) -> dict:
    """Nodes of `sites` sites (Node.site set, as ingest sets it) and one finished campaign
    with one https 8-stream host measurement per ordered pair but `skip`, the measurements
    naming their sites, inserted with bulk_create (seconds for 200 nodes, where the API
    would take minutes). Throughputs vary with the pair, so every status of the legend
    appears. Returns the campaign, its start and the node names."""
    from webapp.results.models import Campaign, Measurement, Node

    nodes = Node.objects.bulk_create(
        [Node(name=name, site=site) for name, site in big_mesh_names(sites, per_site)]
    )
    now = timezone.now().replace(microsecond=0)
    started = now - timedelta(hours=1)
    campaign = Campaign.objects.create(
        state="finished", started=started, finished=now, cycle_fit=cycle_fit
    )
    skipped = set(skip)
    rows = []
    for i, src in enumerate(nodes):
        for j, dst in enumerate(nodes):
            if i == j or (src.name, dst.name) in skipped:
                continue
            gbps = 2.0 + (i * 7 + j * 3) % 45
            rows.append(
                https_measurement(campaign, src, dst, gbps, started + timedelta(seconds=30))
            )
    Measurement.objects.bulk_create(rows, batch_size=5000)
    return {"campaign": campaign, "started": started, "names": [n.name for n in nodes]}


def https_measurement(campaign, src, dst, gbps: float, finished):
    """An unsaved https 8-stream host measurement of src -> dst (Nodes) that took 30 s and
    ended at `finished`, its three transfers succeeded, naming the nodes' sites."""
    from webapp.results.models import Measurement

    return Measurement(
        uuid=uuid_lib.uuid4(),
        campaign=campaign,
        src=src,
        dst=dst,
        protocol="https",
        streams=8,
        transfer_count=3,
        file_size=GIB,
        throughput_gbps=gbps,
        makespan_gbps=gbps,
        succeeded=3,
        failed=0,
        started=finished - timedelta(seconds=30),
        finished=finished,
        payload_sha256="0" * 64,
        src_site=src.site,
        dst_site=dst.site,
    )


def bulk_measurement(src: str, dst: str, *, ago: timedelta, gbps: float = 30.0) -> None:
    """One https 8-stream host measurement of src -> dst (existing nodes) that finished
    `ago`, in a campaign of its own (an earlier cycle's)."""
    from webapp.results.models import Campaign, Node

    ends = {node.name: node for node in Node.objects.filter(name__in=[src, dst])}
    finished = timezone.now() - ago
    campaign = Campaign.objects.create(
        state="finished", started=finished - timedelta(minutes=5), finished=finished
    )
    https_measurement(campaign, ends[src], ends[dst], gbps, finished).save()


class CompactTables(HTMLParser):
    """Collects every compact <table class="grid compact">: column names, site groups (of
    columns: label and size; of rows: label and first row) and, per row, each cell's
    classes, data-* attributes and bands' classes."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict] = {}
        self._table: dict | None = None
        self._text: str | None = None  # "col", "row", "group", "colgroup"
        self._cell: dict | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "table" and "compact" in classes:
            self._table = {"attrs": a, "columns": [], "rows": [], "groups": [], "colgroups": []}
            self.tables[a["data-grid"]] = self._table
        elif self._table is None:
            return
        elif tag == "th" and "col" in classes:
            self._text = "col"
            self._table["columns"].append("")
        elif tag == "th" and "row" in classes:
            self._text = "row"
            self._table["rows"].append({"name": "", "cells": []})
        elif tag == "th" and "group" in classes:
            self._text = "colgroup" if a.get("scope") == "colgroup" else "group"
            if self._text == "colgroup":
                self._table["colgroups"].append({"label": "", "size": int(a["colspan"])})
            else:  # a group's header row: the group starts at the next row
                self._table["groups"].append({"label": "", "start": len(self._table["rows"])})
        elif tag == "td" and self._table["rows"]:
            self._cell = {"classes": classes, "bands": [], **a}
            self._table["rows"][-1]["cells"].append(self._cell)
        elif tag == "i" and self._cell is not None:
            self._cell["bands"].append(classes)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag == "th":
            self._text = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._table is None or self._text is None:
            return
        if self._text == "col":
            self._table["columns"][-1] += data.strip()
        elif self._text == "row":
            self._table["rows"][-1]["name"] += data.strip()
        else:
            key = "colgroups" if self._text == "colgroup" else "groups"
            self._table[key][-1]["label"] += data.strip()


def compact_tables(html: str) -> dict[str, dict]:
    parser = CompactTables()
    parser.feed(html)
    return parser.tables

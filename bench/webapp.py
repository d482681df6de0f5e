"""Web app scale benchmark (not a test): `make bench` runs `.venv/bin/python bench/webapp.py`.

SYNTHETIC DATA: 30 nodes 'synthetic-NN' (site 'synthetic'), 870 ordered pairs, 2 protocols x
2 stream settings x 2 campaigns a day x 90 days (~626k measurements, ~6.9M transfers), loaded
once with COPY into a separate database (default tpcbench_bench) and reused while fresh.

Printed: server time (Django test client, in process) p50/p95 over 20 requests of the grid
page, the MaDDash grid JSON, throughput-vs-latency and stream-comparison, each computed afresh
(aggregate cache cleared first: "uncached") and as served (cached until the data changes),
next to the raw SQL of the same aggregate, all three interleaved so that load from elsewhere
weighs on them alike; the ingest rate through the API (transfers/s); and the alert evaluation
after a campaign (the two newest campaigns evaluated as batches, rolled back afterwards).
Targets (issue 13): the UNCACHED p95 <= 2 x the raw SQL p95 and <= 150 ms, the served (cached)
p95 <= 0.5 x the raw SQL p95; ingest >= 5,000 transfers/s; (issue 24) alert evaluation under
1 s of CPU per 10,000 checks. The app reads through the ORM (any
database); the raw SQL is the aggregate as a hand-written PostgreSQL query returns it
(timestamps as timestamptz); the app asks the database for epoch seconds instead, which it needs
anyway. The app is loaded through webapp.tpcbench_web.wsgi, as gunicorn loads it (start-up objects
frozen out of the garbage collector's full passes). bench/webapp_compare.py runs this for two
checkouts and prints them side by side.

Options: --nodes N --days D (smaller runs), --reload (load again), --requests R,
--only TEXT (only the read rows whose name contains TEXT; repeatable; skips ingest).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from webapp_history import (  # noqa: E402  (bench/ is this script's directory)
    database_url,
    ensure_database,
    history_is_loaded,
    load_history,
    settle,
    setup_django,
)
from webapp_writes import report_alerts, report_ingest  # noqa: E402  (bench/: this script's)

P95_MS = 150.0
RATIO = 2.0
CACHED_RATIO = 0.5


# --- timing -------------------------------------------------------------------------------


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered), p95


def elapsed_ms(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def timed_side_by_side(
    app: Callable[[], object], sql: Callable[[], object], requests: int
) -> dict[str, tuple[float, float]]:
    """p50/p95 of the raw SQL, the app computing every time, and the app as served (cached).

    Interleaved, one of each per round, so that load from elsewhere on the machine weighs on
    all three alike. 'uncached' clears the aggregate cache first: the request after a write.
    """
    from django.core.cache import cache

    for _ in range(2):  # warm connections, plans and code paths
        sql()
        cache.clear()
        app()
    samples: dict[str, list[float]] = {"sql": [], "uncached": [], "cached": []}
    for _ in range(requests):
        samples["sql"].append(elapsed_ms(sql))
        cache.clear()
        samples["uncached"].append(elapsed_ms(app))
        samples["cached"].append(elapsed_ms(app))
    return {kind: percentiles(values) for kind, values in samples.items()}


def get(client, url: str) -> Callable[[], object]:
    def call():
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return response.content

    return call


def raw_sql(sql: str, params: Callable[[], list]) -> Callable[[], object]:
    from django.db import connection

    def call():
        with connection.cursor() as cursor:
            cursor.execute(sql, params())
            return cursor.fetchall()

    return call


# The app reads one (authorization, client) at a time, x509 and native unless asked: so does
# the raw SQL it is held against.
DEFAULT_DIMENSIONS = "auth = 'x509' AND client = 'native'"
LATEST_CAMPAIGN_SQL = (
    "SELECT id FROM results_campaign WHERE state = 'finished' "
    "ORDER BY finished DESC NULLS LAST, id DESC LIMIT 1"
)
GRID_LATEST_SQL = (
    "SELECT src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), sum(failed), "
    "count(*), max(finished) FROM results_measurement "
    "WHERE campaign_id = ("
    + LATEST_CAMPAIGN_SQL
    + ") AND protocol = %s AND "
    + DEFAULT_DIMENSIONS
    + " GROUP BY 1, 2, 3"
)
GRID_PAGE_SQL = (
    "SELECT protocol, src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), "
    "sum(failed), count(*), max(finished) FROM results_measurement "
    "WHERE campaign_id = (" + LATEST_CAMPAIGN_SQL + ") AND " + DEFAULT_DIMENSIONS + " "
    "GROUP BY 1, 2, 3, 4"
)
GRID_NODE_SQL = (
    "SELECT protocol, src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), "
    "sum(failed), count(*), max(finished) FROM results_measurement "
    "WHERE campaign_id = (" + LATEST_CAMPAIGN_SQL + ") AND " + DEFAULT_DIMENSIONS + " "
    "AND (src_id = (SELECT id FROM results_node WHERE name = %s) "
    "OR dst_id = (SELECT id FROM results_node WHERE name = %s)) GROUP BY 1, 2, 3, 4"
)
GRID_WINDOW_SQL = (
    "SELECT src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), sum(failed), "
    "count(*), max(finished) FROM results_measurement "
    "WHERE started >= now() - %s::interval AND protocol = %s AND " + DEFAULT_DIMENSIONS + " "
    "GROUP BY 1, 2, 3"
)
LATENCY_SQL = (
    "SELECT src_id, dst_id, protocol, avg(rtt_ms), avg(throughput_gbps), count(*) "
    "FROM results_measurement WHERE started >= now() - %s::interval AND protocol = %s "
    "AND streams = %s AND throughput_gbps IS NOT NULL AND " + DEFAULT_DIMENSIONS + " "
    "GROUP BY 1, 2, 3"
)
STREAMS_SQL = (
    "SELECT src_id, dst_id, streams, avg(throughput_gbps) FROM results_measurement "
    "WHERE started >= now() - %s::interval AND protocol = %s "
    "AND throughput_gbps IS NOT NULL AND " + DEFAULT_DIMENSIONS + " GROUP BY 1, 2, 3"
)


def first_node() -> str:
    from webapp.results.models import Node

    return Node.objects.order_by("name").values_list("name", flat=True).first() or ""


def page_sizes() -> None:
    """What the browser downloads: the grid page whole and filtered to one node."""
    from django.test import Client

    client, node = Client(), first_node()
    whole, one = (len(client.get(path).content) for path in ("/", f"/?node={node}"))
    print(f"  grid page size: {whole / 1e6:.1f} MB whole, {one / 1e3:.0f} kB for one node")


def page_exists(path: str) -> bool:
    from django.urls import Resolver404, resolve

    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def read_rows(requests: int) -> list[tuple[str, Callable | None, Callable, str]]:
    from django.test import Client

    client = Client()
    rows = []
    if page_exists("/"):
        rows.append(("grid page /", get(client, "/"), raw_sql(GRID_PAGE_SQL, lambda: []), ""))
        node = first_node()
        rows.append(
            (
                "grid page, one node",  # the node filter: its row and column
                get(client, f"/?node={node}"),
                raw_sql(GRID_NODE_SQL, lambda: [node, node]),
                "no target: it filters the whole grid's aggregate (cached, shared by filters)",
            )
        )
    else:
        rows.append(
            ("grid page /", None, raw_sql(GRID_PAGE_SQL, lambda: []), "skipped: no page at / yet")
        )
    rows += [
        (
            "MaDDash grid https (latest)",
            get(client, "/maddash/grids/https"),
            raw_sql(GRID_LATEST_SQL, lambda: ["https"]),
            "",
        ),
        (
            "MaDDash grid https (20d)",
            get(client, "/maddash/grids/https?window=20d"),
            raw_sql(GRID_WINDOW_SQL, lambda: ["20 days", "https"]),
            "",
        ),
        (
            "throughput-vs-latency 20d",
            get(client, "/api/v1/throughput-vs-latency/?protocol=https&streams=8&window=20d"),
            raw_sql(LATENCY_SQL, lambda: ["20 days", "https", 8]),
            "",
        ),
        (
            "stream-comparison 20d",
            get(client, "/api/v1/stream-comparison/?protocol=https&window=20d"),
            raw_sql(STREAMS_SQL, lambda: ["20 days", "https"]),
            "",
        ),
    ]
    return rows


def report_reads(requests: int, only: list[str] | None = None, absolute: bool = True) -> bool:
    """The read table: each read computed afresh and as served, against its raw SQL; the
    absolute p95 target is issue 13's, for its 30-node mesh (`absolute`)."""
    limit = f" and <= {P95_MS:.0f} ms" if absolute else " (no absolute target above 30 nodes)"
    print(
        f"\nread path: p50/p95 in ms over {requests} requests, interleaved; targets: UNCACHED "
        f"p95 <= {RATIO}x the raw SQL p95{limit}, cached p95 <= {CACHED_RATIO}x"
    )
    header = "{:<28} {:>15} {:>15} {:>15} {:>15}  {}"
    print(
        header.format(
            "", "uncached p50/95", "cached p50/95", "raw SQL p50/95", "ratio unc/cache", "verdict"
        )
    )
    all_ok = True
    for name, app, sql, note in read_rows(requests):
        if only and not any(text in name for text in only):
            continue
        if app is None:
            sql50, sql95 = percentiles([elapsed_ms(sql) for _ in range(requests)])
            print(header.format(name, "-", "-", f"{sql50:.1f}/{sql95:.1f}", "-", note))
            continue
        found = timed_side_by_side(app, sql, requests)
        (u50, u95), (c50, c95), (sql50, sql95) = found["uncached"], found["cached"], found["sql"]
        ratio = u95 / sql95 if sql95 else float("inf")
        cached_ratio = c95 / sql95 if sql95 else float("inf")
        if note:  # timed for information, held to no target
            print(
                header.format(
                    name, f"{u50:.1f}/{u95:.1f}", f"{c50:.1f}/{c95:.1f}",
                    f"{sql50:.1f}/{sql95:.1f}", f"{ratio:.2f}/{cached_ratio:.2f}", note,
                )
            )  # fmt: skip
            continue
        misses = [
            reason
            for reason, bad in (
                (f"p95 > {P95_MS:.0f} ms", absolute and u95 > P95_MS),
                (f"ratio > {RATIO}", ratio > RATIO),
                (f"cached ratio > {CACHED_RATIO}", cached_ratio > CACHED_RATIO),
            )
            if bad
        ]
        all_ok &= not misses
        print(
            header.format(
                name,
                f"{u50:.1f}/{u95:.1f}",
                f"{c50:.1f}/{c95:.1f}",
                f"{sql50:.1f}/{sql95:.1f}",
                f"{ratio:.2f}/{cached_ratio:.2f}",
                "OK" if not misses else "MISS: " + ", ".join(misses),
            )
        )
    print(
        "  (raw SQL: the aggregate by hand, timestamps as timestamptz; the app fetches epoch\n"
        "   seconds computed by the database, and the grids also read nodes, thresholds and\n"
        "   failure reasons)"
    )
    return all_ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--reload", action="store_true")
    parser.add_argument(
        "--only", action="append", help="only the read rows whose name contains this; no ingest"
    )
    args = parser.parse_args()
    url = database_url()
    ensure_database(url)
    setup_django(url)
    from webapp.results.models import Measurement, Transfer

    print(
        f"webapp scale benchmark on {urlsplit(url)._replace(netloc='…').geturl()} "
        "(SYNTHETIC history)"
    )
    if args.reload or not history_is_loaded(args.nodes, args.days):
        print(f"loading {args.nodes} nodes x {args.days} days with COPY ...", flush=True)
        load_history(url, args.nodes, args.days)
    else:
        print("reusing the loaded history (pass --reload to load again)")
        settle(url)
    print(
        f"  {Measurement.objects.count():,} measurements, "
        f"{Transfer.objects.order_by().count():,} transfers"
    )
    reads_ok = report_reads(args.requests, args.only, absolute=args.nodes <= 30)
    if page_exists("/"):
        page_sizes()
    if args.only:
        return 0
    ingest_ok = report_ingest(batches=20, batch_size=100)
    alerts_ok = report_alerts()
    met = reads_ok and ingest_ok and alerts_ok
    print("\nall targets met" if met else "\nsome targets missed (above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

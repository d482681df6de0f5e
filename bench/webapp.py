"""Web app scale benchmark (not a test): `make bench` runs `.venv/bin/python bench/webapp.py`.

SYNTHETIC DATA: 30 nodes 'synthetic-NN' (site 'synthetic'), 870 ordered pairs, 2 protocols x
2 stream settings x 2 campaigns a day x 90 days (~626k measurements, ~6.9M transfers), loaded
once with COPY into a separate database (default tpcbench_bench) and reused while fresh.

Printed: server time (Django test client, in process) p50/p95 over 20 requests of the grid
page, the MaDDash grid JSON, throughput-vs-latency and stream-comparison, each computed afresh
(aggregate cache cleared first: "uncached") and as served (cached until the data changes),
next to the raw SQL of the same aggregate, all three interleaved so that load from elsewhere
weighs on them alike; and the ingest rate through the API (transfers/s).
Targets, judged on the UNCACHED p95: <= 1.5 x the raw SQL p95 and <= 150 ms; ingest >= 5,000
transfers/s. The raw SQL is the aggregate as a hand-written query returns it (timestamps as
timestamptz); the app asks PostgreSQL for epoch seconds instead, which it needs anyway. The app
is loaded through tpcbench_web.wsgi, as gunicorn loads it (start-up objects frozen out of the
garbage collector's full passes).

Options: --nodes N --days D (smaller runs), --reload (load again), --requests R,
--only TEXT (only the read rows whose name contains TEXT; repeatable; skips ingest).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "webapp"))

DEFAULT_URL = "postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench_bench"
P95_MS = 150.0
RATIO = 1.5
INGEST_TARGET = 5000.0
FRESH = timedelta(hours=12)  # older history is reloaded: windows are relative to now


def database_url() -> str:
    return os.environ.get("TPCBENCH_BENCH_DATABASE_URL", DEFAULT_URL)


def ensure_database(url: str) -> None:
    """CREATE DATABASE for the benchmark if missing (the tpcbench role may CREATEDB)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SECRET_KEY", "benchmark-only-secret-key")
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver,localhost"
    os.environ["DJANGO_SETTINGS_MODULE"] = "tpcbench_web.settings"
    os.environ.setdefault("DJANGO_LOG_LEVEL", "ERROR")
    os.environ["DJANGO_STATIC_ROOT"] = str(REPO / "var" / "bench-static")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # Production-like static files (hashed manifest), as the pages are served under gunicorn.
    call_command("collectstatic", interactive=False, verbosity=0)
    # Load the app as gunicorn does (its WSGI module also freezes start-up objects out of
    # the garbage collector's full passes).
    import tpcbench_web.wsgi  # noqa: F401


# --- loading ------------------------------------------------------------------------------


def history_is_loaded(nodes: int, days: int) -> bool:
    from django.utils import timezone
    from results import synthetic
    from results.models import Campaign, Measurement, Node

    campaigns = Campaign.objects.filter(schedule=synthetic.SCHEDULE)
    last = campaigns.order_by("-finished").values_list("finished", flat=True).first()
    expected = nodes * (nodes - 1) * 2 * 2 * 2 * days
    return (
        last is not None
        and timezone.now() - last < FRESH
        and Node.objects.filter(site=synthetic.SITE).count() == nodes
        and campaigns.count() == 2 * days
        and Measurement.objects.count() == expected
    )


def load_history(url: str, nodes: int, days: int) -> None:
    """Empty the results tables, then COPY the synthetic history in (ids assigned here)."""
    import psycopg
    from django.db import connection
    from django.utils import timezone
    from results import services, synthetic

    connection.close()
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        conn.execute(
            "TRUNCATE results_transfer, results_measurement, results_campaign, "
            "results_threshold, results_node RESTART IDENTITY CASCADE"
        )
        now = timezone.now()
        names = [synthetic.node_name(i) for i in range(nodes)]
        with conn.cursor().copy(
            "COPY results_node (id, name, address, site, labels, first_seen, last_seen) FROM STDIN"
        ) as copy:
            for i, name in enumerate(names, start=1):
                copy.write_row([i, name, "", synthetic.SITE, '{"synthetic": "true"}', now, now])
        node_ids = {name: i for i, name in enumerate(names, start=1)}
        measurement_id = 0
        transfers = 0
        history = synthetic.synthetic_history(nodes=nodes, days=days, end=now)
        for campaign_id, campaign in enumerate(history, start=1):
            conn.execute(
                "INSERT INTO results_campaign (id, uuid, trigger, schedule, started, finished,"
                " state, created, rtt_checks)"
                " VALUES (%s, %s, 'schedule', %s, %s, %s, 'finished', %s, '[]')",
                [
                    campaign_id,
                    campaign.uuid,
                    synthetic.SCHEDULE,
                    campaign.started,
                    campaign.finished,
                    campaign.started,
                ],
            )
            cursor = conn.cursor()
            m_rows, t_rows = [], []
            for m in campaign.measurements:
                measurement_id += 1
                figures = services.derived_figures(
                    file_size=m["file_size"], transfers=m["transfers"]
                )
                m_rows.append(
                    [
                        measurement_id,
                        m["uuid"],
                        campaign_id,
                        node_ids[m["src"]],
                        node_ids[m["dst"]],
                        m["protocol"],
                        m["streams"],
                        len(m["transfers"]),
                        m["file_size"],
                        m["rtt_ms"],
                        figures.throughput_gbps,
                        figures.makespan_gbps,
                        figures.succeeded,
                        figures.failed,
                        m["started"],
                        m["finished"],
                        services.payload_fingerprint(m),
                        m["finished"],
                    ]
                )
                for t in m["transfers"]:
                    transfers += 1
                    t_rows.append(
                        [
                            transfers,
                            measurement_id,
                            t["index"],
                            t["start"],
                            t["end"],
                            t["bytes"],
                            t["outcome"],
                            t["error_class"],
                            t["message"],
                        ]
                    )
            with cursor.copy(
                "COPY results_measurement (id, uuid, campaign_id, src_id, dst_id, protocol, "
                "streams, transfer_count, file_size, rtt_ms, throughput_gbps, makespan_gbps, "
                "succeeded, failed, started, finished, payload_sha256, received) FROM STDIN"
            ) as copy:
                for row in m_rows:
                    copy.write_row(row)
            with cursor.copy(
                'COPY results_transfer (id, measurement_id, index, start, "end", bytes, '
                "outcome, error_class, message) FROM STDIN"
            ) as copy:
                for row in t_rows:
                    copy.write_row(row)
            if campaign_id % 20 == 0:
                print(
                    f"  loaded {campaign_id} campaigns, {measurement_id:,} measurements, "
                    f"{transfers:,} transfers ({time.perf_counter() - started:.0f} s)",
                    flush=True,
                )
        for table in ("node", "campaign", "measurement", "transfer"):
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('results_{table}', 'id'), "
                f"(SELECT coalesce(max(id), 1) FROM results_{table}))"
            )
        conn.commit()
    settle(url)
    print(
        f"  loaded {measurement_id:,} measurements and {transfers:,} transfers in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )


def settle(url: str) -> None:
    """Visibility map + statistics: index-only scans and good plans from the first request.

    Also on reuse: an earlier run's ingest (added, then deleted rows) leaves pages that
    index-only scans must visit, and the plans of both the app and the raw SQL change.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("measurement", "transfer", "campaign", "node"):
            conn.execute(f"VACUUM ANALYZE results_{table}")


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


LATEST_CAMPAIGN_SQL = (
    "SELECT id FROM results_campaign WHERE state = 'finished' "
    "ORDER BY finished DESC NULLS LAST, id DESC LIMIT 1"
)
GRID_LATEST_SQL = (
    "SELECT src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), sum(failed), "
    "count(*), max(finished) FROM results_measurement "
    "WHERE campaign_id = (" + LATEST_CAMPAIGN_SQL + ") AND protocol = %s GROUP BY 1, 2, 3"
)
GRID_PAGE_SQL = (
    "SELECT protocol, src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), "
    "sum(failed), count(*), max(finished) FROM results_measurement "
    "WHERE campaign_id = (" + LATEST_CAMPAIGN_SQL + ") GROUP BY 1, 2, 3, 4"
)
GRID_WINDOW_SQL = (
    "SELECT src_id, dst_id, streams, avg(throughput_gbps), sum(succeeded), sum(failed), "
    "count(*), max(finished) FROM results_measurement "
    "WHERE started >= now() - %s::interval AND protocol = %s GROUP BY 1, 2, 3"
)
LATENCY_SQL = (
    "SELECT src_id, dst_id, protocol, avg(rtt_ms), avg(throughput_gbps), count(*) "
    "FROM results_measurement WHERE started >= now() - %s::interval AND protocol = %s "
    "AND streams = %s AND throughput_gbps IS NOT NULL GROUP BY 1, 2, 3"
)
STREAMS_SQL = (
    "SELECT src_id, dst_id, streams, avg(throughput_gbps) FROM results_measurement "
    "WHERE started >= now() - %s::interval AND protocol = %s "
    "AND throughput_gbps IS NOT NULL GROUP BY 1, 2, 3"
)


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


def report_reads(requests: int, only: list[str] | None = None) -> bool:
    """The read table; the targets are judged on the uncached figures (the cache is a bonus)."""
    print(
        f"\nread path: p50/p95 in ms over {requests} requests, interleaved; targets on the "
        f"UNCACHED p95: <= {RATIO}x the raw SQL p95 and <= {P95_MS:.0f} ms"
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
        misses = [
            reason
            for reason, bad in (
                (f"p95 > {P95_MS:.0f} ms", u95 > P95_MS),
                (f"ratio > {RATIO}", ratio > RATIO),
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
        "   seconds computed by PostgreSQL, and the grids also read nodes, thresholds and\n"
        "   failure reasons)"
    )
    return all_ok


def report_ingest(batches: int, batch_size: int) -> bool:
    """POST fresh measurements through the API (bulk lists and single), then remove them."""
    import uuid as uuid_lib

    from django.test import Client
    from django.utils import timezone
    from results import services
    from results.models import Measurement, Node

    token = services.api_token_create(name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    names = [f"bench-ingest-{i:02d}" for i in range(8)]
    pairs = [(a, b) for a in names for b in names if a != b]
    start = timezone.now() - timedelta(minutes=30)

    def payload(n: int) -> dict:
        src, dst = pairs[n % len(pairs)]
        at = start + timedelta(seconds=n)
        transfers = [
            {
                "index": i,
                "start": (at + timedelta(milliseconds=10 * i)).isoformat(),
                "end": (at + timedelta(seconds=2 + 0.01 * i)).isoformat(),
                "bytes": 2**30,
                "outcome": "success",
                "error_class": None,
                "message": "",
            }
            for i in range(11)
        ]
        return {
            "uuid": str(uuid_lib.uuid4()),
            "campaign": None,
            "src": src,
            "dst": dst,
            "protocol": "https",
            "streams": 8,
            "file_size": 2**30,
            "rtt_ms": 10.0,
            "started": at.isoformat(),
            "finished": (at + timedelta(seconds=3)).isoformat(),
            "transfers": transfers,
        }

    import json

    bulk = [
        json.dumps([payload(b * batch_size + i) for i in range(batch_size)]) for b in range(batches)
    ]
    singles = [json.dumps(payload(batches * batch_size + i)) for i in range(batch_size * 2)]
    try:
        began = time.perf_counter()
        for body in bulk:
            response = client.post("/api/v1/measurements/", body, content_type="application/json")
            assert response.status_code == 201, response.content[:300]
        bulk_rate = batches * batch_size * 11 / (time.perf_counter() - began)
        began = time.perf_counter()
        for body in singles:
            response = client.post("/api/v1/measurements/", body, content_type="application/json")
            assert response.status_code == 201, response.content[:300]
        single_rate = len(singles) * 11 / (time.perf_counter() - began)
    finally:
        Measurement.objects.filter(src__name__in=names).delete()
        Node.objects.filter(name__in=names).delete()
    print(
        f"\ningest through POST /api/v1/measurements/ (target >= {INGEST_TARGET:,.0f} transfers/s)"
    )
    ok = bulk_rate >= INGEST_TARGET
    print(
        f"  bulk lists of {batch_size} measurements x 11 transfers: {bulk_rate:,.0f} "
        f"transfers/s  {'OK' if ok else 'MISS'}"
    )
    print(f"  one measurement per request:                {single_rate:,.0f} transfers/s")
    return ok


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
    from results.models import Measurement, Transfer

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
    reads_ok = report_reads(args.requests, args.only)
    if args.only:
        return 0
    ingest_ok = report_ingest(batches=20, batch_size=100)
    print("\nall targets met" if reads_ok and ingest_ok else "\nsome targets missed (above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

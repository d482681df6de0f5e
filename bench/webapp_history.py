"""The webapp bench's database (bench/webapp.py): created once, Django set up on it as
gunicorn would, and the SYNTHETIC history (results.synthetic) COPYed in while it is not fresh.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]
DEFAULT_URL = "postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench_bench"
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
    os.environ["DJANGO_SETTINGS_MODULE"] = "webapp.tpcbench_web.settings"
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
    import webapp.tpcbench_web.wsgi  # noqa: F401


# --- loading ------------------------------------------------------------------------------


def history_is_loaded(nodes: int, days: int) -> bool:
    from django.utils import timezone

    from webapp.results import synthetic
    from webapp.results.models import Campaign, Measurement, Node

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

    from webapp.results import synthetic
    from webapp.results.services.measurements import derived_figures, payload_fingerprint

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
                figures = derived_figures(file_size=m["file_size"], transfers=m["transfers"])
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
                        payload_fingerprint(m),
                        m["finished"],
                        "x509",
                        "native",
                        "none",
                        "host",
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
                            "{}",
                            0,
                        ]
                    )
            with cursor.copy(
                "COPY results_measurement (id, uuid, campaign_id, src_id, dst_id, protocol, "
                "streams, transfer_count, file_size, rtt_ms, throughput_gbps, makespan_gbps, "
                "succeeded, failed, started, finished, payload_sha256, received, auth, client, "
                "checksum, scope) "
                "FROM STDIN"
            ) as copy:
                for row in m_rows:
                    copy.write_row(row)
            with cursor.copy(
                'COPY results_transfer (id, measurement_id, index, start, "end", bytes, '
                "outcome, error_class, message, phases, redirects) FROM STDIN"
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

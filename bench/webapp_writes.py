"""The webapp bench's writes (bench/webapp.py): the ingest rate through the API and the alert
evaluation after a campaign, on the bench's database (Django set up by webapp_history)."""

from __future__ import annotations

import time
from datetime import timedelta

INGEST_TARGET = 5000.0  # transfers/s (issue 13)
ALERT_CPU_S = 1.0  # per 10,000 checks, after a campaign (issue 24)
SINGLES = 200  # measurements evaluated one by one, as single POSTs are


def report_ingest(batches: int, batch_size: int) -> bool:
    """POST fresh measurements through the API (bulk lists and single), then remove them."""
    import uuid as uuid_lib

    from django.test import Client
    from django.utils import timezone

    from webapp.results.api.permissions import api_token_create
    from webapp.results.models import Measurement, Node

    token = api_token_create(name="bench")
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


def report_alerts() -> bool:
    """Alert evaluation after a campaign of the loaded mesh: the two newest campaigns'
    measurements, each evaluated as one batch (alerts made, then updated) as a bulk ingest
    does, then SINGLES of the newest one by one as single POSTs do; inside a transaction
    rolled back, so the history stays as loaded."""
    from django.db import transaction

    from webapp.results import synthetic
    from webapp.results.models import Alert, Campaign, Measurement
    from webapp.results.services.alerts import alerts_evaluate

    campaigns = Campaign.objects.filter(schedule=synthetic.SCHEDULE).order_by("-started")
    newest = list(campaigns[:2])[::-1]
    print(
        f"\nalert evaluation after a campaign (target < {ALERT_CPU_S:.1f} s CPU per 10,000 checks)"
    )
    worst = 0.0
    with transaction.atomic():
        Alert.objects.all().delete()  # rolled back below, like everything evaluated here
        for name, campaign in zip(
            ("first campaign, alerts made", "next campaign, updated"), newest, strict=True
        ):
            rows = list(Measurement.objects.filter(campaign=campaign).order_by())
            cpu, wall = time.process_time(), time.perf_counter()
            changes = alerts_evaluate(measurements=rows)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            per = 10_000 / len(rows)
            worst = max(worst, cpu * per)
            print(f"  {name}: {len(rows):,} checks, {len(changes):,} state changes; "
                  f"CPU {cpu * per:.2f} s, wall {wall * per:.2f} s per 10,000 checks  "
                  f"{'OK' if cpu * per < ALERT_CPU_S else 'MISS'}")  # fmt: skip
        Alert.objects.filter(last_measurement__campaign=newest[-1]).update(
            last_started=newest[0].started
        )  # the newest campaign's checks evaluated again, one by one
        singles = list(Measurement.objects.filter(campaign=newest[-1]).order_by("pk")[:SINGLES])
        cpu = time.process_time()
        for m in singles:
            alerts_evaluate(measurements=[m])
        cpu = time.process_time() - cpu
        transaction.set_rollback(True)
    print(f"  one measurement per evaluation (single POSTs): CPU {cpu / len(singles) * 1e3:.1f} ms "
          f"each, {cpu / len(singles) * 1e4:.0f} s per 10,000 (not the target's case)")  # fmt: skip
    return worst < ALERT_CPU_S

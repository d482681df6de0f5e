"""The demo's SQLite runs the read code PostgreSQL runs, and answers the same.

The same measurements go into this suite's PostgreSQL and, in a webapp process of their
own, into a fresh SQLite file (the demo's default database); every grid, aggregate and grid
page must read alike on both.
"""

import json
import os
import subprocess
import sys
import uuid as uuid_lib
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tests.support.demo_reads import answers, store
from tests.support.webapp_payloads import payload

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
GIB_BITS = 2**30 * 8


def measurements(campaign: str) -> list[dict]:
    """A small mesh: a latest campaign (some bands failing whole or in part) and older
    measurements outside it, two protocols, two stream settings."""
    now = timezone.now().replace(microsecond=0)
    found = []
    for i, (src, dst, protocol, streams, gbps, failed) in enumerate(
        [
            ("a", "b", "https", 8, 40.0, 0),
            ("a", "b", "https", 1, 12.5, 0),
            ("b", "a", "https", 8, 5.0, 3),
            ("a", "c", "https", 8, 25.0, 0),
            ("c", "a", "https", 8, 0.0, 11),
            ("c", "a", "https", 1, 0.0, 11),
            ("b", "c", "gridftp", 8, 33.3, 0),
            ("c", "b", "gridftp", 1, 7.7, 1),
        ]
    ):
        ok = 11 - failed
        seconds = ok * 2**30 * 8 / (gbps * 1e9) if ok else 30.0
        for hours, in_campaign in ((3, False), (1, True)):
            found.append(
                payload(
                    src=src,
                    dst=dst,
                    protocol=protocol,
                    streams=streams,
                    seconds=seconds * (1 + hours / 10),
                    failed=failed,
                    error_class="connect" if in_campaign else "timeout",
                    started=now - timedelta(hours=hours, minutes=i),
                    campaign=campaign if in_campaign else None,
                    rtt_ms=10.0 + i,
                )
            )
    return found


def test_sqlite_answers_every_read_as_postgresql_does(reporter, tmp_path):
    campaign = str(uuid_lib.uuid4())
    given = {"campaign": campaign, "payloads": measurements(campaign)}
    (tmp_path / "payloads.json").write_text(json.dumps(given))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.tpcbench_web.settings",
        "DJANGO_SECRET_KEY": "demo-reads-test",
        "DJANGO_ALLOWED_HOSTS": "testserver",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "PYTHONPATH": str(REPO),
    }
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.demo_reads",
         str(tmp_path / "payloads.json"), str(tmp_path / "answers.json")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]
    on_sqlite = json.loads((tmp_path / "answers.json").read_text())

    store(reporter, given["payloads"], campaign)
    on_postgresql = answers(APIClient())
    assert on_sqlite.keys() == on_postgresql.keys()
    for read, answer in on_postgresql.items():
        assert on_sqlite[read] == answer, read
    # The data made the reads say something: failures with their reason, two grids.
    assert [g["name"] for g in on_postgresql["/maddash/grids/"]["grids"]] == ["https", "gridftp"]
    dead = on_postgresql["/maddash/grids/https/c/a"]["checks"]
    assert all("All 11 transfers failed: connect" in check["message"] for check in dead)
    updated, *tables = on_postgresql["/?window=latest"]
    assert "latest campaign started" in updated and len(tables) == 2  # a table per grid

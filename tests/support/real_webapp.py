"""The real webapp for the end-to-end tests: gunicorn serving it on 127.0.0.1, backed by a
PostgreSQL database of its own (created here, dropped afterwards). It can be stopped and
started again on the same port, to play a webapp outage in the middle of a campaign."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from tests.support.test_database import drop_database, free_port, new_database

REPO = Path(__file__).resolve().parents[2]


class RealWebapp:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.database, self.database_url = "", ""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "DJANGO_SECRET_KEY": "orchestrator-e2e-tests",
            "DJANGO_SETTINGS_MODULE": "webapp.tpcbench_web.settings",
            "DJANGO_STATIC_ROOT": str(workdir / "static"),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.token = ""

    def create(self) -> RealWebapp:
        self.database, self.database_url = new_database("tpcbench_orch")
        self.env["DATABASE_URL"] = self.database_url
        self._manage("migrate", "--noinput")
        out = self._manage("create_api_token", "orchestrator-tests")
        self.token = out.strip().splitlines()[-1].split()[-1]
        return self

    def _manage(self, *argv: str) -> str:
        done = subprocess.run(
            [sys.executable, str(REPO / "webapp" / "manage.py"), *argv],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(argv)} failed:\n{done.stderr}")
        return done.stdout

    def start(self) -> None:
        log = open(self.workdir / "gunicorn.log", "ab")  # noqa: SIM115 (the child keeps it)
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("gunicorn")),
                "--chdir",
                str(REPO / "webapp"),
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "2",
                "webapp.tpcbench_web.wsgi",
            ],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        pause = threading.Event()
        for _ in range(600):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError("gunicorn exited; see gunicorn.log") from None
                pause.wait(0.05)
        raise RuntimeError("gunicorn did not listen")

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)
            self.process = None

    def drop(self) -> None:
        self.stop()
        drop_database(self.database)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.database_url) as conn:
            return conn.execute(sql, params).fetchall()

    def campaign_measurements(self, campaign: str) -> list[tuple[Any, ...]]:
        """(uuid, src, dst, protocol, streams, succeeded, failed, transfers, rtt_ms) rows."""
        return self.query(
            """
            SELECT m.uuid::text, s.name, d.name, m.protocol, m.streams, m.succeeded, m.failed,
                   (SELECT count(*) FROM results_transfer t WHERE t.measurement_id = m.id),
                   m.rtt_ms
            FROM results_measurement m
            JOIN results_campaign c ON c.id = m.campaign_id
            JOIN results_node s ON s.id = m.src_id
            JOIN results_node d ON d.id = m.dst_id
            WHERE c.uuid = %s
            """,
            campaign,
        )

    def campaign_state(self, campaign: str) -> str | None:
        rows = self.query("SELECT state FROM results_campaign WHERE uuid = %s", campaign)
        return rows[0][0] if rows else None


@contextmanager
def serving_webapp(prefix: str) -> Iterator[RealWebapp]:
    """A real webapp serving for the length of a `with`, then its database dropped."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    app = RealWebapp(workdir).create()
    app.start()
    try:
        yield app
    finally:
        app.drop()
        shutil.rmtree(workdir, ignore_errors=True)

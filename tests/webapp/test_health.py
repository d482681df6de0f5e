"""`/healthz`: what a kubelet's probe and the images' HEALTHCHECK ask, answered before host
checks and authentication, with the database's state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings

WEBAPP = Path(__file__).resolve().parents[2] / "webapp"
POD_HOST = "10.244.0.7:8000"  # how a kubelet addresses a pod: by its IP, which no setting lists


@pytest.mark.django_db
def test_a_probe_by_the_pods_address_is_answered_while_the_api_refuses_that_host() -> None:
    client = Client()
    health = client.get("/healthz", HTTP_HOST=POD_HOST)
    assert (health.status_code, health.content) == (200, b"ok\n")
    assert client.get("/api/v1/nodes/", HTTP_HOST=POD_HOST).status_code == 400


@pytest.mark.django_db
@override_settings(TPCBENCH_ANONYMOUS_READS=False)
def test_private_reads_do_not_make_the_probe_fail() -> None:
    client = Client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/nodes/").status_code == 401


def webapp_process(
    code: str, database_url: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "webapp.tpcbench_web.settings",
        "DJANGO_SECRET_KEY": "health-tests",
        "DATABASE_URL": database_url,
        "PYTHONPATH": str(WEBAPP.parent),
    }
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout,
        cwd=WEBAPP, check=False,
    )  # fmt: skip


DEAD_DATABASE = "postgres://nobody:nothing@127.0.0.1:9/nowhere"  # the discard port: nobody


def test_without_its_database_the_webapp_is_not_ready_and_says_why() -> None:
    code = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "answer = Client().get('/healthz')\n"
        "print(answer.status_code, answer.content.decode().strip())\n"
    )
    result = webapp_process(code, DEAD_DATABASE)
    assert result.returncode == 0, result.stderr
    status, _, reason = result.stdout.strip().partition(" ")
    assert status == "503"
    assert reason.startswith("database unreachable:") and "127.0.0.1" in reason


def test_migrate_locked_waits_for_the_database_then_gives_up_with_the_reason() -> None:
    result = webapp_process(
        "import django, sys; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate_locked', '--wait', '3')\n",
        DEAD_DATABASE,
    )
    assert result.returncode != 0
    assert "waiting for the database:" in result.stderr
    assert "did not accept connections within 3 s" in result.stderr

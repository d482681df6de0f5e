"""Settings from the environment: fail fast on a missing secret, SQLite only as the default."""

import os
import subprocess
import sys
from pathlib import Path

WEBAPP = Path(__file__).resolve().parents[2] / "webapp"


def settings_in_subprocess(env: dict[str, str], expression: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, "-c", f"import webapp.tpcbench_web.settings as s; print({expression})"],
        cwd=WEBAPP,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_missing_secret_key_in_production_fails_with_a_clear_message():
    result = settings_in_subprocess({"DJANGO_DEBUG": "false"}, "s.DEBUG")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false" in result.stderr


def test_debug_runs_without_a_secret_and_defaults_to_sqlite():
    result = settings_in_subprocess({"DJANGO_DEBUG": "true"}, "s.DATABASES['default']['ENGINE']")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "django.db.backends.sqlite3"


def test_database_url_and_anonymous_reads_come_from_the_environment():
    result = settings_in_subprocess(
        {
            "DJANGO_SECRET_KEY": "x" * 50,
            "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/prod",
            "TPCBENCH_ANONYMOUS_READS": "false",
        },
        "s.DATABASES['default']['NAME'], s.TPCBENCH_ANONYMOUS_READS, s.DEBUG",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "prod False False"


def test_a_malformed_boolean_is_refused():
    result = settings_in_subprocess({"DJANGO_DEBUG": "maybe"}, "s.DEBUG")
    assert result.returncode != 0 and "DJANGO_DEBUG='maybe'" in result.stderr


def test_the_test_suite_runs_on_postgresql(settings):
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"

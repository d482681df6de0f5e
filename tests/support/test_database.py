"""The test suite's PostgreSQL server, and databases of their own on it for webapps the
tests run (created for a test, dropped after)."""

from __future__ import annotations

import os
import socket
import uuid

import psycopg

SERVER_URL = os.environ.get(
    "TPCBENCH_TEST_DATABASE_URL", "postgres://tpcbench:tpcbench@127.0.0.1:5432/tpcbench"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_database(prefix: str) -> tuple[str, str]:
    """(name, URL) of a fresh database on the test server."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(SERVER_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = SERVER_URL.rpartition("/")
    return name, f"{base}/{name}"


def drop_database(name: str) -> None:
    with psycopg.connect(SERVER_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

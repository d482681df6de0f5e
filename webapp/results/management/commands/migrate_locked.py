"""`migrate`, one process at a time: every webapp pod runs it before it serves (the chart's
init container), and concurrent pods take turns (results.vendor_sql.migration_lock: an
advisory lock on PostgreSQL, taken before any table exists to lock a row of).

It first waits for the database to accept connections (a bundled PostgreSQL starts alongside
the first webapp pod), so a fresh install does not go through CrashLoopBackOff.
"""

import time

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from webapp.results.vendor_sql import migration_lock
from webapp.tpcbench_web.health import database_problem

RETRY_EVERY = 2.0


class Command(BaseCommand):
    help = "Apply migrations; concurrent runs wait for each other (a database lock)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--wait",
            type=float,
            default=300.0,
            metavar="SECONDS",
            help="how long to wait for the database to accept connections (default 300)",
        )

    def wait_for_database(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (problem := database_problem()) is not None:  # as /healthz asks
            if time.monotonic() + RETRY_EVERY > deadline:
                raise CommandError(
                    f"the database did not accept connections within {seconds:g} s: {problem}"
                )
            self.stderr.write(f"waiting for the database: {problem}")
            connection.close()
            time.sleep(RETRY_EVERY)

    def handle(self, *args, **options) -> None:
        self.wait_for_database(options["wait"])
        with migration_lock():
            call_command("migrate", interactive=False, verbosity=options["verbosity"])

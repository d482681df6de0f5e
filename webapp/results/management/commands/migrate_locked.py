"""`migrate`, one process at a time: every webapp pod runs it before it serves (the chart's
init container), and on PostgreSQL an advisory lock makes concurrent pods take turns."""

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connection

# Any constant works; it names this lock among the database's advisory locks.
MIGRATION_LOCK = 0x7470_6362  # "tpcb"


class Command(BaseCommand):
    help = "Apply migrations; concurrent runs wait for each other (PostgreSQL advisory lock)."

    def handle(self, *args, **options) -> None:
        if connection.vendor != "postgresql":
            call_command("migrate", interactive=False, verbosity=options["verbosity"])
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
            try:
                call_command("migrate", interactive=False, verbosity=options["verbosity"])
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])

"""Where the webapp's code depends on the database: the one module that names a vendor.

Every read goes through the ORM and runs alike on PostgreSQL and on the demo's SQLite; no
read needs hand-written SQL (bench/webapp.py measures the ORM reads against raw SQL). What
is left here has no portable spelling in Django:

- `EpochSeconds`: a timestamp as whole seconds since 1970, computed by the database (the
  grids need epochs; fetching and parsing thousands of timestamps costs more than the query);
- `insert_transfers`: PostgreSQL's COPY for the transfer rows of an ingest (several times
  faster than a multi-row INSERT at ingest rates); elsewhere bulk_create;
- `migration_lock`: PostgreSQL's advisory lock, which makes concurrent `migrate` runs take
  turns before any table exists to lock a row of; SQLite has one writer at a time anyway.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.db import connection
from django.db.models import Func, IntegerField

from webapp.results.models import Transfer
from webapp.results.models.measurements import TRANSFER_FIELDS


def _on_postgresql() -> bool:
    return connection.vendor == "postgresql"


class EpochSeconds(Func):
    """Whole seconds since 1970 (UTC) of a timestamp expression, as an integer."""

    template = "FLOOR(EXTRACT(EPOCH FROM %(expressions)s))::bigint"  # PostgreSQL
    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra_context):
        # Django stores SQLite timestamps as UTC text; strftime('%s') reads them as UTC.
        # ('%%%%s': the template's formatting halves it, then the backend's placeholders.)
        return self.as_sql(
            compiler,
            connection,
            template="CAST(strftime('%%%%s', %(expressions)s) AS INTEGER)",
            **extra_context,
        )


_TRANSFER_COLUMNS = ("measurement_id", *TRANSFER_FIELDS)


def insert_transfers(transfers: Sequence[Transfer]) -> None:
    """Insert transfer rows (their measurement_id set): COPY on PostgreSQL, else bulk_create."""
    if not _on_postgresql():
        Transfer.objects.bulk_create(transfers, batch_size=500)
        return
    from psycopg.types.json import Jsonb  # PostgreSQL's driver: only where it is used

    columns = ", ".join(connection.ops.quote_name(c) for c in _TRANSFER_COLUMNS)
    sql = f"COPY {Transfer._meta.db_table} ({columns}) FROM STDIN"
    with connection.wrap_database_errors, connection.cursor() as cursor, cursor.copy(sql) as copy:
        for t in transfers:
            copy.write_row(
                (
                    t.measurement_id,
                    t.index,
                    t.start,
                    t.end,
                    t.bytes,
                    t.outcome,
                    t.error_class,
                    t.message,
                    Jsonb(t.phases),
                    t.streaming_gbps,
                    t.source_server,
                    t.destination_server,
                    t.redirects,
                )
            )


# Any constant works; it names this lock among the database's advisory locks.
MIGRATION_LOCK = 0x7470_6362  # "tpcb"


@contextmanager
def migration_lock() -> Iterator[None]:
    """Hold the migration lock: concurrent holders (webapp pods starting) take turns."""
    if not _on_postgresql():
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
        try:
            yield
        finally:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])

"""Where the webapp's code depends on the database: the one module that names a vendor.

Every read goes through the ORM and runs alike on PostgreSQL and on the demo's SQLite; no
read needs hand-written SQL (bench/webapp.py measures the ORM reads against raw SQL). What
is left here has no portable spelling in Django:

- `EpochSeconds`: a timestamp as whole seconds since 1970, computed by the database (the
  grids need epochs; fetching and parsing thousands of timestamps costs more than the query);
- `insert_transfers`: PostgreSQL's COPY for the transfer rows of an ingest (several times
  faster than a multi-row INSERT at ingest rates); elsewhere bulk_create;
- `grouped_medians`: the median of a column per group (PostgreSQL's percentile_cont, one
  row per group; elsewhere the values are fetched and the medians taken here), what the
  alerts compare a measurement with;
- `update_rows`: an UPDATE of many rows' fields from a COPY into a temporary table
  (PostgreSQL; Django's bulk_update builds a CASE per field and row, several times the
  CPU at the alerts' ten thousand rows); elsewhere bulk_update;
- `migration_lock`: PostgreSQL's advisory lock, which makes concurrent `migrate` runs take
  turns before any table exists to lock a row of; SQLite has one writer at a time anyway.
"""

import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, Func, IntegerField, QuerySet

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


class _Median(Aggregate):
    """PostgreSQL's continuous median of an expression over a group."""

    function = "percentile_cont"
    template = "percentile_cont(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


def grouped_medians(
    rows: QuerySet, group: Sequence[str], column: str
) -> dict[tuple, tuple[float, int]]:
    """Per group (the values of `group`): (median of `column`, how many rows), over `rows`
    (rows with a null `column` left out). One query."""
    rows = rows.filter(**{f"{column}__isnull": False}).order_by()
    if _on_postgresql():
        grouped = rows.values(*group).annotate(median=_Median(column), count=Count("pk"))
        return {tuple(r[g] for g in group): (r["median"], r["count"]) for r in grouped}
    values: dict[tuple, list[float]] = {}
    for *key, value in rows.values_list(*group, column):
        values.setdefault(tuple(key), []).append(value)
    return {key: (statistics.median(v), len(v)) for key, v in values.items()}


def update_rows(rows: Sequence, fields: Sequence[str]) -> None:
    """Write `fields` of model instances `rows` (all of one model, stored ones) by their pk."""
    if not rows:
        return
    model = type(rows[0])
    if not _on_postgresql():
        model.objects.bulk_update(rows, fields, batch_size=500)
        return
    from psycopg.types.json import Jsonb

    meta = model._meta
    columns = [meta.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    names = [quote(c.column) for c in columns]
    table, temp = quote(meta.db_table), quote(f"{meta.db_table}_update")
    with connection.wrap_database_errors, connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {temp} ON COMMIT DROP AS "
            f"SELECT id, {', '.join(names)} FROM {table} WITH NO DATA"
        )
        with cursor.copy(f"COPY {temp} (id, {', '.join(names)}) FROM STDIN") as copy:
            for row in rows:
                values = [getattr(row, c.attname) for c in columns]
                copy.write_row(
                    [row.pk, *(Jsonb(v) if isinstance(v, list | dict) else v for v in values)]
                )
        assignments = ", ".join(f"{n} = u.{n}" for n in names)
        cursor.execute(f"UPDATE {table} t SET {assignments} FROM {temp} u WHERE t.id = u.id")
        cursor.execute(f"DROP TABLE {temp}")


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

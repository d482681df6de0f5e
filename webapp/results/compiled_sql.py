"""ORM queries run with less of Django's per-call work, on any database.

`compiled_query` runs a values()/values_list() query built from hashable arguments:
- compiled once per distinct arguments. Compiling costs Django a few tenths of a
  millisecond per query, more than the database spends on a small one, and much more with
  correlated subqueries (the Campaigns box: 3 ms against 1); most reads repeat their
  arguments (none, the latest campaign's id, a protocol) until the data changes;
- its rows fetched at once, as tuples. Django's own iteration fetches in chunks and
  rebuilds every row; for aggregates of thousands of rows that costs more than the
  database's work.

Values go through the database's converters where a column needs one (the demo's SQLite
returns timestamps and UUIDs as text); on PostgreSQL the columns used here need none.
"""

import functools
from collections.abc import Callable

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet
from django.db.models.query import ValuesIterable

# A compiled query: its SQL, parameters, column names, and per column position the
# converters to apply ((functions, expression) as Django's compiler lists them).
Compiled = tuple[str, tuple, list[str], dict[int, tuple[list, object]]]


def _compile(queryset: QuerySet) -> Compiled | None:
    """The SQL of a values()/values_list() query and how to convert its rows; None when the
    query can match nothing (a filter such as pk__in=[])."""
    query = queryset.query
    compiler = query.get_compiler(queryset.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return None
    # As Django's values() names the columns, and its results_iter() finds their converters.
    if query.selected:
        names = list(query.selected)
    else:
        names = [*query.extra_select, *query.values_select, *query.annotation_select]
    return sql, tuple(params), names, _converters(compiler)


def _converters(compiler) -> dict[int, tuple[list, object]]:
    """Per column position, the converters its values need: the database backend's (SQLite's
    text to timestamps, UUIDs, decimals, booleans) and the field's own (from_db_value).
    Left out: expressions' casts of numbers (float(), int() of an aggregate), which both
    drivers return as Python numbers already; they cost more than the query on thousands of
    rows. (PostgreSQL's numeric, such as AVG of an integer column, stays a Decimal.)"""
    connection = compiler.connection
    found = {}
    for position, (expression, _, _) in enumerate(compiler.select):
        functions = connection.ops.get_db_converters(expression)
        functions += expression.output_field.get_db_converters(connection)
        if functions:
            found[position] = (functions, expression)
    return found


def _run(compiled: Compiled, alias: str) -> list[tuple]:
    sql, params, _, converters = compiled
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not converters:
        return rows
    converted = []
    for row in rows:
        values = list(row)
        for position, (functions, expression) in converters.items():
            value = values[position]
            for convert in functions:
                value = convert(value, expression, connection)
            values[position] = value
        converted.append(tuple(values))
    return converted


def compiled_query(build: Callable[..., QuerySet]) -> Callable[..., list]:
    """Decorate a function that builds a values() or values_list() query on the default
    database from hashable arguments: calling it runs the query and returns its rows as the
    query would (dicts, or tuples). The SQL is compiled once per distinct arguments (the
    last COMPILED_KEPT), so a query whose arguments recur (none at all, the latest
    campaign's id, a protocol) costs no ORM work after its first run."""

    @functools.lru_cache(maxsize=COMPILED_KEPT)
    def compiled(*arguments) -> tuple[Compiled | None, bool]:
        queryset = build(*arguments).using(DEFAULT_DB_ALIAS)
        return _compile(queryset), queryset._iterable_class is ValuesIterable

    @functools.wraps(build)
    def rows(*arguments) -> list:
        found, as_dicts = compiled(*arguments)
        if found is None:
            return []
        rows = _run(found, DEFAULT_DB_ALIAS)
        if as_dicts:
            names = found[2]
            return [dict(zip(names, row, strict=True)) for row in rows]
        return rows

    rows.queryset = build  # the query itself (a QuerySet each call), as tests compare
    return rows


COMPILED_KEPT = 64

"""Hand-written SQL, where the ORM path costs more than it should on PostgreSQL: a set of
grids in one statement, one round trip, nothing compiled per request. The ORM path
(results.grid.build_bands_by_parts) gives the same grids on any database, and a test holds
the two equal."""

from datetime import UTC, datetime

from django.db import connection
from django.utils import timezone

from results.choices import CampaignState, Outcome
from results.grid_bands import GridBands, assemble_grid
from results.grid_limits import resolvers_from
from results.selectors import LATEST_CAMPAIGN_SQL, CampaignStart
from results.windows import parse_window

# PostgreSQL: everything a set of grids needs in one statement (one round trip, and no ORM
# compilation): the latest campaign, the cell aggregates, the nodes (ranked as ORDER BY name
# sorts them), the thresholds, the failure reason of each band's latest all-failed measurement
# and, for the grid page, which protocols have any measurement. Rows are tagged by their first
# column; the others are shared (unused ones NULL), a cell's row[1:10] being what
# _cell_aggregates() gives:
# kind, text, int a, int b, int c, float x, ok, bad, n, last epoch, float y, error class, message
_CELL, _NODE, _THRESHOLD, _FAILURE, _PROTOCOL, _CAMPAIGN = 0, 1, 2, 3, 4, 5


_FIRST_FAILURE_SQL = (
    "(SELECT t.{column} FROM results_transfer t "
    "WHERE t.measurement_id = f.id AND t.outcome = %s ORDER BY t.index LIMIT 1)"
)


_BANDS_SQL = (
    "{latest}"
    "cells AS ("
    "SELECT protocol, src_id, dst_id, streams, avg(throughput_gbps) AS value, "
    "sum(succeeded) AS ok, sum(failed) AS bad, count(*) AS n, "
    "FLOOR(EXTRACT(EPOCH FROM max(finished)))::bigint AS last "
    "FROM results_measurement WHERE {window} AND protocol = ANY(%s) GROUP BY 1, 2, 3, 4"
    "), failing AS ("  # the latest all-failed measurement of each band (a partial index)
    "SELECT DISTINCT ON (protocol, src_id, dst_id, streams) "
    "protocol, src_id, dst_id, streams, id "
    "FROM results_measurement WHERE {window} AND protocol = ANY(%s) "
    "AND succeeded = 0 AND failed > 0 "
    "ORDER BY protocol, src_id, dst_id, streams, started DESC"
    ") "
    "SELECT 0, protocol, src_id, dst_id, streams, value, ok, bad, n, last, NULL::float8, "
    "NULL::text, NULL::text FROM cells "
    "UNION ALL SELECT 1, name, id, row_number() OVER (ORDER BY name), "
    "NULL, link_gbps, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM results_node "
    "UNION ALL SELECT 2, protocol, src_id, dst_id, NULL, ok_gbps, NULL, NULL, NULL, NULL, "
    "warning_gbps, NULL, NULL FROM results_threshold WHERE protocol = ANY(%s) "
    "UNION ALL SELECT 3, f.protocol, f.src_id, f.dst_id, f.streams, "
    "NULL, NULL, NULL, NULL, NULL, NULL, "
    + _FIRST_FAILURE_SQL.format(column="error_class")
    + ", "
    + _FIRST_FAILURE_SQL.format(column="message")
    + " FROM failing f{failing_join}{probe}{campaign}"
)


# A time window holds many all-failed measurements in bands that also succeeded: only the
# bands that show a reason (no transfer succeeded) look theirs up. A campaign measures each
# band once, so there this join would cost more than the few lookups it saves.
_ONLY_ALL_FAILED_BANDS_SQL = (
    " JOIN cells c USING (protocol, src_id, dst_id, streams) WHERE c.ok = 0 AND c.bad > 0"
)


_CAMPAIGN_SQL = (  # the latest campaign's start, epoch seconds (the float keeps microseconds)
    " UNION ALL SELECT 5, NULL, NULL, NULL, NULL, EXTRACT(EPOCH FROM started)::float8, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM results_campaign WHERE id = (SELECT id FROM latest)"
)


_PROBE_SQL = (
    " UNION ALL SELECT 4, p, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM unnest(%s::varchar[]) AS p "
    "WHERE EXISTS (SELECT 1 FROM results_measurement WHERE protocol = p)"
)


def grid_bands_in_one_query(protocols: list[str], window: str, *, probe: bool) -> list[GridBands]:
    """The grids of `protocols` over `window` on PostgreSQL in one query (what
    results.grid.build_bands_by_parts gives); with `probe`, only the grids of `protocols`
    that have any measurement (grid_names(), in the same query)."""
    parsed = parse_window(window)
    params: list = []
    if parsed.is_latest:
        sql = _BANDS_SQL.format(
            latest=f"WITH latest AS ({LATEST_CAMPAIGN_SQL}), ",
            window="campaign_id = (SELECT id FROM latest)",
            failing_join="",
            probe=_PROBE_SQL if probe else "",
            campaign=_CAMPAIGN_SQL if probe else "",
        )
        params.append(CampaignState.FINISHED)
        window_params: list = []
    else:
        sql = _BANDS_SQL.format(
            latest="WITH ",
            window="started >= %s",
            failing_join=_ONLY_ALL_FAILED_BANDS_SQL,
            probe=_PROBE_SQL if probe else "",
            campaign="",
        )
        window_params = [timezone.now() - parsed.duration]
    params += [*window_params, protocols, *window_params, protocols, protocols]
    params += [Outcome.FAILURE, Outcome.FAILURE]
    if probe:
        params.append(protocols)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    by_protocol: dict[str, list[tuple]] = {p: [] for p in protocols}
    reasons: dict[tuple[str, int, int, int], tuple[str, str]] = {}
    ranked_nodes: list[tuple[int, int, str]] = []
    links: dict[int, float | None] = {}
    thresholds: list[tuple] = []
    present: set[str] = set()
    campaign = None
    for row in found:
        kind = row[0]
        if kind == _CELL:
            by_protocol[row[1]].append(row[1:10])
        elif kind == _NODE:
            ranked_nodes.append((row[3], row[2], row[1]))
            links[row[2]] = row[5]
        elif kind == _THRESHOLD:
            thresholds.append((row[1], row[2], row[3], row[5], row[10]))
        elif kind == _FAILURE:  # as _failure_reasons() gives it (for the bands that use it)
            reasons[row[1], row[2], row[3], row[4]] = (row[11] or "unknown", row[12])
        elif kind == _PROTOCOL:
            present.add(row[1])
        else:
            started = None if row[5] is None else datetime.fromtimestamp(row[5], tz=UTC)
            campaign = CampaignStart(started=started)
    ranked_nodes.sort()
    nodes = [(node_id, name) for _, node_id, name in ranked_nodes]
    resolvers = resolvers_from(protocols, thresholds, links)
    shown = [p for p in protocols if p in present] if probe else protocols
    return [
        assemble_grid(
            protocol,
            parsed.label,
            by_protocol[protocol],
            reasons,
            nodes,
            *resolvers[protocol],
            campaign=campaign,
        )
        for protocol in shown
    ]

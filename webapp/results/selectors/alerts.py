"""Reads of the alerts for the pages: which grid cells alert (docs/alerts.md)."""

from collections.abc import Sequence

from webapp.results.choices import Scope
from webapp.results.models import Alert
from webapp.results.models.alerts import STATE_VALUES, AlertState


def alerting_cells(
    *, protocols: Sequence[str], auth: str, client: str, checksum: str
) -> dict[str, dict[tuple[str, str], str]]:
    """Per protocol: (src name, dst name) -> the worst state of the pair's alerting checks
    (any stream count) of these dimensions, host to host; ok pairs are left out. One query."""
    rows = (
        Alert.objects.filter(
            protocol__in=protocols, auth=auth, client=client, checksum=checksum, scope=Scope.HOST
        )
        .exclude(state=AlertState.OK)
        .order_by()
        .values_list("protocol", "src__name", "dst__name", "state")
    )
    cells: dict[str, dict[tuple[str, str], str]] = {p: {} for p in protocols}
    for protocol, src, dst, state in rows:
        pair = cells[protocol]
        known = pair.get((src, dst))
        if known is None or STATE_VALUES[state] > STATE_VALUES[known]:
            pair[(src, dst)] = state
    return cells

"""Which measurements a read takes: a window's filter, the dimensions (authorization, client,
checksum), and the node names the aggregates are grouped by (as ids)."""

from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from webapp.results.choices import DIMENSION_DEFAULTS
from webapp.results.compiled_sql import compiled_query
from webapp.results.models import Measurement, Node
from webapp.results.selectors.campaigns import latest_campaign_id
from webapp.results.windows import Window


def window_lookups(window: Window, *, now: datetime | None = None) -> dict[str, object]:
    """The measurement filter of a window as field lookups (a query for 'latest', none
    otherwise).

    The latest campaign's id goes in as a value: a query built with it is compiled once
    per campaign (results.compiled_sql), where a subquery in its place would be compiled, and
    run, with every query that uses the filter. A relative window reaches back from the
    start of the current minute, the minute its cached answer is keyed by (results.cache):
    its queries too are then compiled once a minute.
    """
    if window.is_latest:
        campaign_id = latest_campaign_id()
        return {"campaign_id": campaign_id} if campaign_id is not None else {"pk__in": ()}
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    return {"started__gte": minute - window.duration}


@compiled_query
def _node_names() -> QuerySet:
    return Node.objects.order_by().values_list("id", "name")


def node_names_by_id() -> dict[int, str]:
    return dict(_node_names())


def dimension_lookups(dimensions: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The authorization, client and checksum to read (x509, native and none unless asked),
    as lookups."""
    chosen = {**DIMENSION_DEFAULTS, **(dimensions or {})}
    return tuple(sorted(chosen.items()))


def measurements_exist() -> bool:
    """Whether anything was ever measured (the pages say how to start when not)."""
    return Measurement.objects.exists()


def missing_nodes(*names: str) -> list[str]:
    """Those of `names` that no node has, in the order given (each once)."""
    known = set(Node.objects.filter(name__in=names).values_list("name", flat=True))
    return [name for name in dict.fromkeys(names) if name not in known]

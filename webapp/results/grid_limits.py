"""A grid's colours: the OK / WARNING / CRITICAL limits of a pair (the most specific
Threshold row an admin made, else fractions of the pair's link capacity, else the absolute
defaults), a band's status and message from its aggregate, and the legend's labels."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import QuerySet

from webapp.results.models import Threshold
from webapp.results.orm_rows import compiled_query

if TYPE_CHECKING:
    from webapp.results.grid_bands import GridBands

OK, WARNING, CRITICAL, UNKNOWN, NOT_RUN = 0, 1, 2, 3, 4


STATUS_SHORT_NAMES = ["OK", "WARNING", "CRITICAL", "UNKNOWN", "NOT RUN"]


@dataclass(frozen=True)
class Limits:
    ok_gbps: float
    warning_gbps: float
    link_gbps: float | None = None  # the link capacity these are fractions of, if they are

    def status(self, value_gbps: float) -> int:
        if value_gbps >= self.ok_gbps:
            return OK
        return WARNING if value_gbps >= self.warning_gbps else CRITICAL


# (grid-wide Limits, (src_id, dst_id) -> Limits, whether the defaults differ per pair's link)
Resolver = tuple[Limits, Callable, bool]


def limits_resolvers(protocols: list[str], links: dict[int, float | None]) -> dict[str, Resolver]:
    """Per protocol: its grid-wide Limits and (src_id, dst_id) -> Limits, the most specific
    Threshold winning over the defaults. One query for all the protocols.

    `links`: node id -> link capacity in Gbit/s (None: unknown)."""
    rows = [row for row in _thresholds() if row[0] in protocols]
    return resolvers_from(protocols, rows, links)


@compiled_query
def _thresholds() -> QuerySet:
    """Every Threshold row (an admin makes a few): one query compiled once."""
    return Threshold.objects.order_by().values_list(
        "protocol", "src_id", "dst_id", "ok_gbps", "warning_gbps"
    )


def _link_defaults(links: dict[int, float | None]) -> tuple[Callable, Limits, bool]:
    """The default limits when no Threshold row applies: fractions of the smaller known link
    of a pair (TPCBENCH_OK_FRACTION / _WARNING_FRACTION), else the absolute settings.

    Returns (src_id, dst_id) -> Limits, the limits to show for the grid, and whether they
    differ per pair (nodes with different or unknown capacities)."""
    absolute = Limits(settings.TPCBENCH_DEFAULT_OK_GBPS, settings.TPCBENCH_DEFAULT_WARNING_GBPS)
    known = {node: link for node, link in links.items() if link}
    ok_fraction = settings.TPCBENCH_OK_LINK_FRACTION
    warning_fraction = settings.TPCBENCH_WARNING_LINK_FRACTION

    def of_link(link: float) -> Limits:
        return Limits(ok_fraction * link, warning_fraction * link, link)

    if not known:
        return (lambda src_id, dst_id: absolute), absolute, False
    capacities = set(known.values())
    if len(capacities) == 1 and len(known) == len(links):  # one capacity everywhere
        shown = of_link(next(iter(capacities)))
        return (lambda src_id, dst_id: shown), shown, False

    def for_pair(src_id: int, dst_id: int) -> Limits:
        ends = [known[n] for n in (src_id, dst_id) if n in known]
        return of_link(min(ends)) if ends else absolute

    return for_pair, absolute, True


def resolvers_from(
    protocols: list[str], thresholds: Iterable[tuple], links: dict[int, float | None]
) -> dict[str, Resolver]:
    """limits_resolvers() from Threshold rows (protocol, src_id, dst_id, ok, warning)."""
    link_limits, link_shown, per_link = _link_defaults(links)
    rows: dict[str, dict[tuple, Limits]] = {p: {} for p in protocols}
    for protocol, src_id, dst_id, ok_gbps, warning_gbps in thresholds:
        rows[protocol][(src_id, dst_id)] = Limits(ok_gbps, warning_gbps)
    resolvers = {}
    for protocol, specific in rows.items():
        grid_row = specific.pop((None, None), None)  # an admin's grid-wide row beats the links

        def resolve(src_id: int, dst_id: int, specific=specific, grid_row=grid_row):
            if specific:
                for key in ((src_id, dst_id), (src_id, None), (None, dst_id)):
                    if key in specific:
                        return specific[key]
            return grid_row if grid_row is not None else link_limits(src_id, dst_id)

        if grid_row is not None:
            resolvers[protocol] = (grid_row, resolve, False)
        else:
            resolvers[protocol] = (link_shown, resolve, per_link)
    return resolvers


def limits_resolver(protocol: str, links: dict[int, float | None]) -> Resolver:
    return limits_resolvers([protocol], links)[protocol]


NOT_RUN_MESSAGE = "No measurement in this window"


def band_status(
    succeeded: int,
    failed: int,
    value: float | None,
    measurements: int,
    limits: Limits,
    reason: tuple[str, str] | None,
) -> tuple[int, str]:
    """Status and message of one band from the window's aggregate of a pair."""
    if succeeded == 0 and failed > 0:
        error_class, message = reason or ("unknown", "")
        text = f"All {failed} transfers failed: {error_class}"
        return CRITICAL, f"{text}: {message}" if message else text
    if value is None:
        return UNKNOWN, "No transfer result"
    status = limits.status(value)
    if measurements > 1:
        text = f"Average throughput {value:.2f} Gbps over {measurements} measurements"
    else:
        text = f"Throughput {value:.2f} Gbps"
    if failed:
        if status == OK:
            status = WARNING
        text += f"; {failed}/{succeeded + failed} failed"
    return status, text


def status_labels(bands: "GridBands") -> list[str]:
    if bands.per_link_limits:  # the limits differ per pair: say what they are fractions of
        ok = f"{settings.TPCBENCH_OK_LINK_FRACTION:.0%} of the pair's link"
        warning = f"{settings.TPCBENCH_WARNING_LINK_FRACTION:.0%} of the pair's link"
    else:
        ok, warning = f"{bands.ok_gbps:g} Gbps", f"{bands.warning_gbps:g} Gbps"
    of_link = f" ({bands.link_gbps:g} Gbit/s links)" if bands.link_gbps else ""
    return [
        f"Throughput >= {ok}{of_link}",
        f"Throughput >= {warning} and < {ok}, or some transfers failed",
        f"Throughput < {warning}, or every transfer failed",
        "Unable to retrieve data",
        "Check has not yet run",
    ]

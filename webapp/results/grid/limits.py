"""A grid's colours: the OK / WARNING / CRITICAL limits of a pair (the most specific
Threshold row an admin made, else fractions of the pair's link capacity, else the absolute
defaults) and a band's status and message from its aggregate. No queries: the Threshold
rows come from grid.queries."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings

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
    """Per protocol: its grid-wide Limits and (src_id, dst_id) -> Limits, the most specific
    of the Threshold rows (protocol, src_id, dst_id, ok, warning) winning over the defaults.

    `links`: node id -> link capacity in Gbit/s (None: unknown)."""
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

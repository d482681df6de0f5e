"""One grid in plain tuples (GridBands): a row per source, a cell per destination, a band
per stream setting. The grid page and the MaDDash JSON are both built from it;
`assemble_grid` makes it from a window's aggregate rows, whichever query produced them, and
`status_labels` says what its colours mean."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter

from django.conf import settings

from webapp.results.grid.limits import CRITICAL, NOT_RUN, NOT_RUN_MESSAGE, Limits, band_status
from webapp.results.selectors.campaigns import CampaignStart

# Bands of an empty grid: the orchestrator's default stream settings.
DEFAULT_STREAM_SETTINGS = (8, 1)


def check_name(streams: int) -> str:
    return f"{streams} stream" if streams == 1 else f"{streams} streams"


def epoch(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None


# A band of a cell, compact (cheap to compute, cache and walk):
# (status, message, prevCheckTime, value_gbps, succeeded, failed, measurements).
Band = tuple[int, str, int | None, float | None, int, int, int]


NOT_RUN_BAND: Band = (NOT_RUN, NOT_RUN_MESSAGE, None, None, 0, 0, 0)


@dataclass(frozen=True)
class GridBands:
    """One grid in plain tuples: what both the MaDDash JSON and the grid page are built from.

    cells[r][c] is None on the diagonal, else one Band per stream setting (order of streams).
    """

    name: str
    window: str
    names: list[str]
    streams: list[int]
    check_names: list[str]
    ok_gbps: float
    warning_gbps: float
    link_gbps: float | None  # ok/warning are fractions of this capacity, when they are
    per_link_limits: bool  # the default limits are fractions of each pair's own link
    last_update: int | None  # epoch of the newest measurement in the window
    cells: list[list[tuple[Band, ...] | None]]
    stats: list[int]  # bands per status (MaDDash's report)
    failing: list[tuple[str, str]]  # (direction, node) all of whose bands are CRITICAL
    # The grid page's window 'latest': the campaign it shows (None: no campaign, or not asked).
    campaign: CampaignStart | None = None
    # The measurements it shows: how their transfers were authorized, what drove them, the
    # checksum step they ended with.
    auth: str = "x509"
    client: str = "native"
    checksum: str = "none"
    # host: rows and columns are nodes; site: they are sites (results.grid.sites).
    scope: str = "host"


def assemble_grid(
    name: str,
    window: str,
    rows: list[tuple],
    reasons: dict,
    nodes: list[tuple[int, str]],
    grid_wide: Limits,
    limits_for: Callable,
    per_link: bool = False,
    *,
    campaign: CampaignStart | None = None,
    auth: str = "x509",
    client: str = "native",
    checksum: str = "none",
    scope: str = "host",
) -> GridBands:
    streams = sorted({row[3] for row in rows} or DEFAULT_STREAM_SETTINGS, reverse=True)
    position = {node_id: i for i, (node_id, _) in enumerate(nodes)}
    check = {k: j for j, k in enumerate(streams)}
    # Every band NOT RUN until an aggregate row says otherwise (one pass over the rows).
    bands: list[list[list[Band] | None]] = [
        [None if r == c else [NOT_RUN_BAND] * len(streams) for c in range(len(nodes))]
        for r in range(len(nodes))
    ]
    stats = [0] * 6
    # CRITICAL bands per node as source / as destination (all of them: a problem to report).
    critical_out = [0] * len(nodes)
    critical_in = [0] * len(nodes)
    placed = 0
    for row in rows:
        _, src_id, dst_id, k, value, ok, bad, n, last = row
        r, c = position.get(src_id), position.get(dst_id)
        if r is None or c is None:  # a node made after the node list was read
            continue
        placed += 1
        reason = reasons.get((name, src_id, dst_id, k)) if bad else None
        status, message = band_status(ok, bad, value, n, limits_for(src_id, dst_id), reason)
        bands[r][c][check[k]] = (status, message, last, value, ok, bad, n)
        stats[status] += 1
        if status == CRITICAL:
            critical_out[r] += 1
            critical_in[c] += 1
    stats[NOT_RUN] = len(nodes) * (len(nodes) - 1) * len(streams) - placed
    cells = [[None if cell is None else tuple(cell) for cell in row] for row in bands]

    names = [n for _, n in nodes]
    per_node = (len(nodes) - 1) * len(streams)  # bands of each node, each way
    failing = [
        (direction, node)
        for i, node in enumerate(names)
        for direction, critical in (("Outgoing", critical_out[i]), ("Incoming", critical_in[i]))
        if per_node and critical == per_node
    ]
    return GridBands(
        name=name,
        window=window,
        names=names,
        streams=streams,
        check_names=[check_name(k) for k in streams],
        ok_gbps=grid_wide.ok_gbps,
        warning_gbps=grid_wide.warning_gbps,
        link_gbps=grid_wide.link_gbps,
        per_link_limits=per_link,
        last_update=max(map(itemgetter(8), rows), default=None),
        cells=cells,
        stats=stats,
        failing=failing,
        campaign=campaign,
        auth=auth,
        client=client,
        checksum=checksum,
        scope=scope,
    )


def status_labels(bands: GridBands) -> list[str]:
    """The legend: what each status means in this grid (MaDDash's statusLabels)."""
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

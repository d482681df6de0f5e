"""One grid in plain tuples (GridBands): a row per source, a cell per destination, a band
per stream setting. The grid page and the MaDDash JSON are both built from it;
`assemble_grid` makes it from a window's aggregate rows, whichever query produced them."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter

from results.grid_limits import CRITICAL, NOT_RUN, NOT_RUN_MESSAGE, Limits, band_status
from results.selectors import CampaignStart

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


def assemble_grid(
    name: str,
    window: str,
    rows: list[tuple],
    reasons: dict,
    nodes: list[tuple[int, str]],
    grid_limits: Limits,
    limits_for: Callable,
    per_link: bool = False,
    *,
    campaign: CampaignStart | None = None,
) -> GridBands:
    # (src, dst, streams) -> the aggregate row
    found = {(row[1], row[2], row[3]): row for row in rows}
    streams = sorted({row[3] for row in rows} or DEFAULT_STREAM_SETTINGS, reverse=True)
    stats = [0] * 6
    # CRITICAL bands per node as source / as destination (all of them: a problem to report).
    critical_out = [0] * len(nodes)
    critical_in = [0] * len(nodes)
    cells: list[list[tuple[Band, ...] | None]] = []
    for r, (src_id, _) in enumerate(nodes):
        row_cells: list[tuple[Band, ...] | None] = []
        for c, (dst_id, _) in enumerate(nodes):
            if src_id == dst_id:
                row_cells.append(None)
                continue
            limits = limits_for(src_id, dst_id)
            bands = []
            for k in streams:
                aggregate = found.get((src_id, dst_id, k))
                if aggregate is None:
                    band = NOT_RUN_BAND
                else:
                    _, _, _, _, value, ok, bad, n, last = aggregate
                    reason = reasons.get((name, src_id, dst_id, k)) if bad else None
                    status, message = band_status(ok, bad, value, n, limits, reason)
                    band = (status, message, last, value, ok, bad, n)
                    if status == CRITICAL:
                        critical_out[r] += 1
                        critical_in[c] += 1
                stats[band[0]] += 1
                bands.append(band)
            row_cells.append(tuple(bands))
        cells.append(row_cells)

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
        ok_gbps=grid_limits.ok_gbps,
        warning_gbps=grid_limits.warning_gbps,
        link_gbps=grid_limits.link_gbps,
        per_link_limits=per_link,
        last_update=max(map(itemgetter(8), rows), default=None),
        cells=cells,
        stats=stats,
        failing=failing,
        campaign=campaign,
    )

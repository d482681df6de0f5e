"""The aggregate reads computed the slow, obvious way: model instances summed in Python.

The app's reads are ORM aggregates (results.grid.queries, results.selectors); tests hold
them equal to these, on whatever data a test made.
"""

import math
from dataclasses import replace
from datetime import datetime

from django.utils import timezone

from webapp.results.choices import Outcome
from webapp.results.grid.bands import GridBands, assemble_grid
from webapp.results.grid.queries import limits_resolvers
from webapp.results.models import Measurement, Node
from webapp.results.selectors.campaigns import CampaignStart, latest_campaign
from webapp.results.windows import parse_window


def measurements_of(window: str, auth: str = "x509", client: str = "native") -> list[Measurement]:
    """The window's measurements of this authorization and client, as model instances (with
    their nodes)."""
    parsed = parse_window(window)
    found = Measurement.objects.select_related("src", "dst").order_by("id")
    found = found.filter(auth=auth, client=client)
    if parsed.is_latest:
        campaign = latest_campaign()
        return [] if campaign is None else list(found.filter(campaign=campaign))
    minute = timezone.now().replace(second=0, microsecond=0)  # windows move by the minute
    return list(found.filter(started__gte=minute - parsed.duration))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None  # as SQL's AVG: NULLs left out


def _epoch(moment: datetime) -> int:
    return math.floor(moment.timestamp())


def reference_grids(
    protocols: list[str],
    window: str,
    *,
    campaign: bool = False,
    auth: str = "x509",
    client: str = "native",
) -> list:
    """results.grid.queries.build_bands(protocols, window, with_campaign=campaign, auth=,
    client=), by hand."""
    chosen = [m for m in measurements_of(window, auth, client) if m.protocol in protocols]
    bands: dict[tuple, list[Measurement]] = {}
    for m in chosen:
        bands.setdefault((m.protocol, m.src_id, m.dst_id, m.streams), []).append(m)
    rows, reasons = [], {}
    for key, group in bands.items():
        throughputs = [m.throughput_gbps for m in group if m.throughput_gbps is not None]
        ok, bad = sum(m.succeeded for m in group), sum(m.failed for m in group)
        last = _epoch(max(m.finished for m in group))
        rows.append((*key, _mean(throughputs), ok, bad, len(group), last))
        if ok == 0 and bad > 0:  # the first failed transfer of the band's latest measurement
            latest = max(group, key=lambda m: (m.started, m.id))
            first = latest.transfers.filter(outcome=Outcome.FAILURE).order_by("index").first()
            reasons[key] = (first.error_class or "unknown", first.message)
    nodes = sorted(Node.objects.all(), key=lambda n: n.name)
    resolvers = limits_resolvers(protocols, {n.id: n.link_gbps for n in nodes})
    start = None
    if campaign and parse_window(window).is_latest and (found := latest_campaign()):
        start = CampaignStart(started=found.started)
    return [
        assemble_grid(
            protocol,
            parse_window(window).label,
            [r for r in rows if r[0] == protocol],
            reasons,
            [(n.id, n.name) for n in nodes],
            *resolvers[protocol],
            campaign=start,
            auth=auth,
            client=client,
        )
        for protocol in protocols
    ]


def rounded(grids: list[GridBands]) -> list[GridBands]:
    """Grids with each band's mean to 9 digits: sums of floats may differ in their last bit
    with the order of adding."""

    def band(b: tuple) -> tuple:
        return (*b[:3], None if b[3] is None else round(b[3], 9), *b[4:])

    return [
        replace(
            grid,
            cells=[
                [None if cell is None else tuple(band(b) for b in cell) for cell in row]
                for row in grid.cells
            ],
        )
        for grid in grids
    ]


def reference_latency_rows(window: str, protocol: str | None, streams: int | None) -> list:
    """results.selectors.aggregates._latency_rows, by hand: (src, dst, protocol, mean RTT, mean
    throughput, measurements with a throughput) per pair and protocol."""
    groups: dict[tuple, list[Measurement]] = {}
    for m in measurements_of(window):
        if m.throughput_gbps is None or (protocol and m.protocol != protocol):
            continue
        if streams and m.streams != streams:
            continue
        groups.setdefault((m.src.name, m.dst.name, m.protocol), []).append(m)
    return sorted(
        (
            *key,
            _mean([m.rtt_ms for m in group if m.rtt_ms is not None]),
            _mean([m.throughput_gbps for m in group]),
            len(group),
        )
        for key, group in groups.items()
    )


def reference_stream_rows(window: str, protocol: str) -> list:
    """results.selectors.aggregates._stream_rows, by hand: (src, dst, streams, mean throughput)."""
    groups: dict[tuple, list[float]] = {}
    for m in measurements_of(window):
        if m.throughput_gbps is not None and m.protocol == protocol:
            groups.setdefault((m.src.name, m.dst.name, m.streams), []).append(m.throughput_gbps)
    return sorted((*key, _mean(values)) for key, values in groups.items())


def approx_rows(rows: list[tuple]) -> list[tuple]:
    """Rows with their floats to 9 digits (see rounded)."""
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows]

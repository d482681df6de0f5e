"""Where the lab's TCP buffer, not the protocol, bounds a measurement (the notes of the
latency and streams pages).

One TCP stream moves at most about buffer x 8 / RTT: its window cannot exceed its buffer,
and Linux gives only about half of the buffer to the window, so the real ceiling is lower
still. A measurement of K transfers of S streams each therefore reads at most K x S times
that (the paper's K x F x 8 / mean(duration) too: no transfer is shorter than its file over
its streams' ceiling). When that bound is below the pair's link capacity, or below what the
same pair reached with more streams, the measurement is limited by the buffer: more streams
win by construction and the slope against RTT is the buffer's (1 / RTT), not the protocol's.
The bound uses the whole buffer, so a pair flagged here is certainly limited.
"""

from django.db.models import Avg, Max, QuerySet

from webapp.results.cache import cached_aggregate
from webapp.results.choices import Auth, Checksum, Client
from webapp.results.compiled_sql import compiled_query
from webapp.results.models import Measurement, Node
from webapp.results.selectors.measurements import dimension_lookups, window_lookups
from webapp.results.windows import parse_window

MIB = 2**20
BELOW_LINK = "link"
BELOW_MORE_STREAMS = "more streams"


def stream_ceiling_gbps(buffer_bytes: int | None, rtt_ms: float | None) -> float | None:
    """What one TCP stream moves at most: buffer x 8 / RTT in Gbit/s (None when unknown)."""
    if not buffer_bytes or not rtt_ms or rtt_ms <= 0:
        return None
    return buffer_bytes * 8 / (rtt_ms / 1000) / 1e9


@compiled_query
def _setting_rows(lookups: tuple[tuple[str, object], ...], protocol: str | None) -> QuerySet:
    """Per pair, protocol and stream setting: mean throughput, mean RTT, the largest buffer
    and the largest K of the measurements with a throughput."""
    queryset = Measurement.objects.filter(**dict(lookups), throughput_gbps__isnull=False)
    if protocol:
        queryset = queryset.filter(protocol=protocol)
    return (
        queryset.order_by()
        .values_list("src_id", "dst_id", "protocol", "streams")
        .annotate(
            throughput=Avg("throughput_gbps"),
            rtt=Avg("rtt_ms"),
            buffer=Max("tcp_buffer_bytes"),
            transfers=Max("transfer_count"),
        )
    )


@compiled_query
def _nodes() -> QuerySet:
    return Node.objects.order_by().values_list("id", "name", "link_gbps")


def _pair_link(links: dict[int, float | None], src_id: int, dst_id: int) -> float | None:
    """The smaller of the two nodes' known link capacities (None: neither known)."""
    known = [links[n] for n in (src_id, dst_id) if links.get(n)]
    return min(known) if known else None


@cached_aggregate("buffer-limits")
def buffer_limits(
    *,
    streams: int,
    window: str,
    protocol: str | None = None,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> dict:
    """The (pair, protocol)s whose `streams`-stream measurements the TCP buffer limits.

    `checked`: how many pairs have such measurements with a known buffer and RTT; `pairs`:
    those limited, each with its buffer, mean RTT, one stream's ceiling, the measurement's
    (K x streams x that), the link, what more streams reached, and what it is below.
    """
    parsed = parse_window(window)
    lookups = tuple(window_lookups(parsed).items()) + dimension_lookups(
        {"auth": auth, "client": client, "checksum": checksum}
    )
    rows = _setting_rows(lookups, protocol)
    nodes = {node_id: (name, link) for node_id, name, link in _nodes()}
    links = {node_id: link for node_id, (_, link) in nodes.items()}
    faster: dict[tuple[int, int, str], float] = {}  # best throughput above `streams`
    for src_id, dst_id, name, setting, throughput, *_ in rows:
        key = (src_id, dst_id, name)
        if setting > streams and throughput > faster.get(key, 0.0):
            faster[key] = throughput
    checked: set[tuple[int, int]] = set()
    limited = []
    for src_id, dst_id, name, setting, _, rtt, buffer, transfers in rows:
        one_stream = stream_ceiling_gbps(buffer, rtt)
        if setting != streams or one_stream is None:
            continue
        checked.add((src_id, dst_id))
        ceiling = one_stream * transfers * streams
        link = _pair_link(links, src_id, dst_id)
        more = faster.get((src_id, dst_id, name))
        below = [
            reason
            for reason, bound in ((BELOW_LINK, link), (BELOW_MORE_STREAMS, more))
            if bound is not None and ceiling < bound
        ]
        if below:
            limited.append(
                {
                    "src": nodes[src_id][0],
                    "dst": nodes[dst_id][0],
                    "protocol": name,
                    "streams": streams,
                    "transfers": transfers,
                    "tcp_buffer_bytes": buffer,
                    "rtt_ms": rtt,
                    "stream_ceiling_gbps": one_stream,
                    "ceiling_gbps": ceiling,
                    "link_gbps": link,
                    "more_streams_gbps": more,
                    "below": below,
                }
            )
    limited.sort(key=lambda p: (p["protocol"], p["src"], p["dst"]))
    return {"streams": streams, "window": parsed.label, "checked": len(checked), "pairs": limited}


def buffer_note(result: dict) -> dict | None:
    """What a page's note says of `buffer_limits`' answer: how many pairs, of how many, the
    buffers, RTTs, one stream's ceilings and K of the limited ones, and what they are below;
    None when no pair is limited (the buffer is unknown or large enough)."""
    pairs = result["pairs"]
    if not pairs:
        return None

    def span(key: str) -> tuple:
        values = [p[key] for p in pairs]
        return min(values), max(values)

    return {
        "streams": result["streams"],
        "pairs": len({(p["src"], p["dst"]) for p in pairs}),
        "checked": result["checked"],
        "buffer_mib": tuple(v / MIB for v in span("tcp_buffer_bytes")),
        "rtt_ms": span("rtt_ms"),
        "stream_ceiling_gbps": span("stream_ceiling_gbps"),
        "transfers": span("transfers"),
        "below_link": any(BELOW_LINK in p["below"] for p in pairs),
        "below_more_streams": any(BELOW_MORE_STREAMS in p["below"] for p in pairs),
    }

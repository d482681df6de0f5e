"""The sites' aggregates (issue 23), for the API and the Sites page, cached per data version:
what each level of the redirector hierarchy costs (the hop-overhead table, beside STFC's
published 0.3-1.5 s per hop) and a site's aggregate throughput against its number of hosts
(the scaling sweep). A fixed number of queries whatever the number of sites or lookups."""

from collections import defaultdict
from statistics import median

from django.db.models import Avg, Count

from webapp.results.cache import cached_aggregate
from webapp.results.choices import (
    Auth,
    Checksum,
    Client,
    LookupLevel,
    Outcome,
    Protocol,
    Scope,
)
from webapp.results.models import Lookup, Measurement
from webapp.results.selectors.measurements import window_lookups
from webapp.results.windows import parse_window

# What the STFC study of XRootD measured per redirector hop (local, European, global).
STFC_REFERENCE = {
    "source": "STFC (published)",
    "seconds_per_hop_low": 0.3,
    "seconds_per_hop_high": 1.5,
}
LEVEL_ORDER = {level: i for i, level in enumerate(LookupLevel.values)}
PROTOCOL_ORDER = {protocol: i for i, protocol in enumerate(Protocol.values)}


def _median(values: list[float]) -> float | None:
    return median(values) if values else None


@cached_aggregate("hop-overhead")
def hop_overhead(*, window: str = "20d", protocol: str | None = None) -> dict:
    """Per (level, protocol): the window's lookups, how many failed, and the medians of the
    successful ones' seconds, hops, seconds per hop (those with a hop) and of the RTT between
    the levels (where there was one)."""
    parsed = parse_window(window)
    rows = Lookup.objects.filter(**window_lookups(parsed)).order_by()
    if protocol:
        rows = rows.filter(protocol=protocol)
    groups: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for level, proto, outcome, seconds, hops, rtt in rows.values_list(
        "level", "protocol", "outcome", "seconds", "hops", "level_rtt_ms"
    ).iterator(chunk_size=2000):
        groups[level, proto].append((outcome, seconds, hops, rtt))
    levels = []
    for (level, proto), found in sorted(
        groups.items(), key=lambda kv: (LEVEL_ORDER[kv[0][0]], PROTOCOL_ORDER[kv[0][1]])
    ):
        ok = [(s, h) for outcome, s, h, _ in found if outcome == Outcome.SUCCESS and s is not None]
        levels.append(
            {
                "level": level,
                "protocol": proto,
                "lookups": len(found),
                "failed": sum(1 for outcome, *_ in found if outcome != Outcome.SUCCESS),
                "median_seconds": _median([s for s, _ in ok]),
                "median_hops": _median([h for _, h in ok]),
                "median_seconds_per_hop": _median([s / h for s, h in ok if h > 0]),
                "median_level_rtt_ms": _median([r for *_, r in found if r is not None]),
            }
        )
    return {
        "window": parsed.label,
        "protocol": protocol,
        "levels": levels,
        "reference": STFC_REFERENCE,
    }


@cached_aggregate("site-scaling")
def site_scaling(
    *,
    window: str = "20d",
    src_site: str | None = None,
    dst_site: str | None = None,
    protocol: str | None = None,
    streams: int | None = None,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> dict:
    """Per (src_site, dst_site, protocol, streams, hosts) of the scaling sweeps' points: the
    measurements, their mean aggregate throughput, the ideal (m x the one-host mean) and the
    efficiency mean(m) / (m x mean(1)), both null without a one-host point."""
    parsed = parse_window(window)
    filters = {
        **window_lookups(parsed),
        "scope": Scope.SITE,
        "hosts__isnull": False,
        "auth": auth,
        "client": client,
        "checksum": checksum,
    }
    optional = {"src_site": src_site, "dst_site": dst_site, "protocol": protocol}
    filters |= {k: v for k, v in optional.items() if v}
    if streams is not None:
        filters["streams"] = streams
    rows = (
        Measurement.objects.filter(**filters)
        .order_by()
        .values_list("src_site", "dst_site", "protocol", "streams", "hosts")
        .annotate(measurements=Count("*"), throughput_gbps=Avg("throughput_gbps"))
    )
    found = sorted(rows, key=lambda r: (r[0], r[1], PROTOCOL_ORDER[r[2]], -r[3], r[4]))
    one_host = {tuple(r[:4]): r[6] for r in found if r[4] == 1 and r[6] is not None}
    points = []
    for src, dst, proto, k, hosts, measurements, gbps in found:
        one = one_host.get((src, dst, proto, k))
        ideal = hosts * one if one else None
        points.append(
            {
                "src_site": src,
                "dst_site": dst,
                "protocol": proto,
                "streams": k,
                "hosts": hosts,
                "measurements": measurements,
                "throughput_gbps": gbps,
                "ideal_gbps": ideal,
                "efficiency": gbps / ideal if ideal and gbps is not None else None,
            }
        )
    return {
        "window": parsed.label,
        "auth": auth,
        "client": client,
        "checksum": checksum,
        "points": points,
    }


def sites_measured() -> bool:
    """Whether any measurement names a site or any lookup was stored (the navigation links
    the Sites page then). Two small queries; the caller caches."""
    with_sites = Measurement.objects.filter(src_site__isnull=False).order_by()
    return with_sites.exists() or Lookup.objects.order_by().exists()

"""The site grids (issue 23): one per protocol, a row per source site, a cell per
destination site, a band per stream setting, made by the same `assemble_grid` as the host
grids, sites standing where nodes stand.

A cell holds the site-scope measurements between its two sites in the window (copies
addressed to the destination site's redirector); where there are none, the host-scope
measurements between hosts of those sites, grouped by the sites their measurements name.
A cell is one or the other, never a mix: a site measurement is a copy through the
redirectors, a host one a copy between two named hosts, and their averages mean different
things. Host measurements within one site stay out (the grid's diagonal is empty).
Thresholds are the grid-wide ones (a Threshold row names nodes, not sites); an all-failed
band says how many transfers failed, not the first one's message.
"""

from django.db.models import Avg, Count, F, Max, Q, QuerySet, Sum

from webapp.results.cache import cached_aggregate
from webapp.results.choices import Auth, Checksum, Client, Scope
from webapp.results.grid.bands import GridBands, assemble_grid
from webapp.results.grid.queries import Lookups, _window, check_grid_name, limits_resolvers
from webapp.results.models import Measurement
from webapp.results.vendor_sql import EpochSeconds
from webapp.results.windows import parse_window


def measured_sites() -> list[str]:
    """Every site a measurement names at either end, sorted (empty: no sites anywhere, the
    grid is host x host as before sites existed). One query."""
    found = (
        Measurement.objects.filter(Q(src_site__isnull=False) | Q(dst_site__isnull=False))
        .order_by()
        .values_list("src_site", "dst_site")
        .distinct()
    )
    return sorted({site for pair in found for site in pair if site})


def _site_aggregates(filters: Lookups, protocols: tuple[str, ...]) -> QuerySet:
    """(scope, protocol, src_site, dst_site, streams, value, succeeded, failed, measurements,
    last epoch) of the window's measurements between two sites."""
    return (
        Measurement.objects.filter(
            **dict(filters),
            protocol__in=protocols,
            src_site__isnull=False,
            dst_site__isnull=False,
            hosts__isnull=True,  # the fronts': a scaling sweep's point is not the site's figure
        )
        .exclude(src_site=F("dst_site"))
        .order_by()
        .values_list("scope", "protocol", "src_site", "dst_site", "streams")
        .annotate(
            value=Avg("throughput_gbps"),
            succeeded=Sum("succeeded"),
            failed=Sum("failed"),
            measurements=Count("*"),
            last=EpochSeconds(Max("finished")),
        )
    )


def site_rows(filters: Lookups, protocols: tuple[str, ...]) -> list[tuple]:
    """The grids' aggregate rows (protocol, src_site, dst_site, streams, value, succeeded,
    failed, measurements, last) as `assemble_grid` reads them: per cell the site-scope rows
    when it has any, else the host-scope ones."""
    rows = list(_site_aggregates(filters, protocols)) if protocols else []
    through_sites = {(p, s, d) for scope, p, s, d, *_ in rows if scope == Scope.SITE}
    return [
        tuple(row[1:])
        for row in rows
        if (row[0] == Scope.SITE) == (tuple(row[1:4]) in through_sites)
    ]


def build_site_bands(
    protocols: list[str],
    window: str,
    *,
    sites: list[str],
    with_campaign: bool = False,
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> list[GridBands]:
    """The site grids of `protocols` over `window` (rows and columns: `sites`)."""
    parsed = parse_window(window)
    lookups, campaign = _window(parsed, with_campaign=with_campaign)
    filters = (*lookups, ("auth", auth), ("client", client), ("checksum", checksum))
    rows = site_rows(filters, tuple(protocols))
    resolvers = limits_resolvers(protocols, {})
    by_protocol: dict[str, list[tuple]] = {p: [] for p in protocols}
    for row in rows:
        by_protocol[row[0]].append(row)
    nodes = [(site, site) for site in sites]
    grids = []
    for protocol in protocols:
        grid_wide = resolvers[protocol][0]
        grids.append(
            assemble_grid(
                protocol,
                parsed.label,
                by_protocol[protocol],
                {},
                nodes,
                grid_wide,
                lambda src, dst, limits=grid_wide: limits,
                campaign=campaign,
                auth=auth,
                client=client,
                checksum=checksum,
                scope=Scope.SITE,
            )
        )
    return grids


@cached_aggregate("maddash-site-bands")
def site_grid_bands(
    *,
    name: str,
    window: str = "latest",
    auth: str = Auth.X509,
    client: str = Client.NATIVE,
    checksum: str = Checksum.NONE,
) -> GridBands:
    """The site grid `name` (a protocol) over `window`, for the MaDDash JSON; raises
    UnknownGrid or ValueError (window)."""
    check_grid_name(name)
    return build_site_bands(
        [name], window, sites=measured_sites(), auth=auth, client=client, checksum=checksum
    )[0]

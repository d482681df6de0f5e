"""Writes of nodes: made on first sight by whatever names them (a measurement, a baseline, a
preliminary run), their link capacity kept as the orchestrator reports it."""

from collections.abc import Iterable

from django.utils import timezone

from webapp.results.models import Node


def nodes_ensure(*, names: Iterable[str]) -> dict[str, Node]:
    """Nodes by name, creating unknown ones; every named node's last_seen becomes now."""
    now = timezone.now()
    # Sorted inserts keep concurrent ingests from deadlocking on the unique name index.
    nodes = [Node(name=n, first_seen=now, last_seen=now) for n in sorted(set(names))]
    Node.objects.bulk_create(
        nodes, update_conflicts=True, unique_fields=["name"], update_fields=["last_seen"]
    )
    if any(n.pk is None for n in nodes):  # backends that cannot return ids on upsert
        return {n.name: n for n in Node.objects.filter(name__in=[n.name for n in nodes])}
    return {n.name: n for n in nodes}


def node_links_update(*, payloads: Iterable[dict]) -> None:
    """Keep each node's link capacity as the payloads report it (src_link_gbps, dst_link_gbps;
    null forgets it, absent leaves it); one query when any is given, a write only for a node
    whose capacity changed."""
    links: dict[str, float | None] = {}
    for payload in payloads:
        for role in ("src", "dst"):
            if f"{role}_link_gbps" in payload:  # null: no longer known (a cap was lifted)
                links[payload[role]] = payload[f"{role}_link_gbps"]
    if not links:
        return
    stored = dict(Node.objects.filter(name__in=links).values_list("name", "link_gbps"))
    for name, link in sorted(links.items()):
        if stored.get(name) != link:
            Node.objects.filter(name=name).update(link_gbps=link)


def node_sites_update(*, payloads: Iterable[dict]) -> None:
    """Keep each host's site as host-scope payloads report it (src_site, dst_site; absent or
    null leaves it): the site grid's drill-down lists a site's hosts by it. A site-scope
    measurement's ends are not data servers of the site, so it names none. One query when
    any is given, a write only for a node whose site changed."""
    sites: dict[str, str] = {}
    for payload in payloads:
        if payload.get("scope", "host") != "host":
            continue
        for role in ("src", "dst"):
            if payload.get(f"{role}_site"):
                sites[payload[role]] = payload[f"{role}_site"]
    if not sites:
        return
    stored = dict(Node.objects.filter(name__in=sites).values_list("name", "site"))
    for name, site in sorted(sites.items()):
        if stored.get(name) != site:
            Node.objects.filter(name=name).update(site=site)

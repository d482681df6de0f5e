"""`campaign run --scope site` planned without servers: which sites have fronts, where each
copy goes (fronts, the GridFTP round robin, the sweep's host pairs), what the record says,
and the settings that go with it. Running it on real servers: tests/lab/test_lab_site_campaign.py.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from orchestrator.campaign.settings import CampaignSettings, load_settings
from orchestrator.campaign.site_scope import site_fronts, site_request, sweep_specs
from orchestrator.endpoints import Endpoint, reported_site
from orchestrator.errors import UserError
from orchestrator.measurement.record import MeasurementRecord
from orchestrator.measurement.run import name_direct_servers
from orchestrator.measurement.spec import MeasurementSpec
from orchestrator.transfers.record import TransferRecord

PORTS = {"https": 1094, "root": 1094, "gridftp": 2811}


def host(name: str, site: str | None, octet: int) -> Endpoint:
    return Endpoint(name, f"10.99.1.{octet}", dict(PORTS), site=site)


def front(site: str | None, octet: int) -> Endpoint:
    ports = {"https": 1094, "root": 1094}
    name = f"{site}-rdr" if site else "regional"
    return Endpoint(name, f"10.99.2.{octet}", ports, site=site, redirector=True)


NODES = [host("a-1", "a", 1), host("a-2", "a", 2), host("a-3", "a", 3), host("b-1", "b", 4),
         host("b-2", "b", 5), host("c-1", "c", 6), host("lone", None, 7)]  # fmt: skip
REDIRECTORS = [front("a", 1), front("b", 2), front("d", 3), front(None, 4)]


def test_a_site_needs_a_front_and_hosts_and_the_others_are_named(caplog) -> None:
    with caplog.at_level(logging.WARNING):
        fronts = site_fronts(NODES, REDIRECTORS)
    assert {name: [h.name for h in f.hosts] for name, f in fronts.items()} == {
        "a-rdr": ["a-1", "a-2", "a-3"],
        "b-rdr": ["b-1", "b-2"],
    }
    assert "site c has no redirector" in caplog.text
    assert "site d has no data-server host" in caplog.text


def test_sweep_follows_each_site_spec_up_to_the_smaller_site() -> None:
    fronts = site_fronts(NODES, REDIRECTORS)
    spec = MeasurementSpec("a-rdr", "b-rdr", "https", 8, scope="site")
    assert [s.hosts for s in sweep_specs([spec], fronts)] == [None, 1, 2]
    assert MeasurementSpec("a-rdr", "b-rdr", "https", 8, scope="site", hosts=2).key == (
        "a-rdr->b-rdr/https/8/site/2"
    )


def lanes(protocol: str, hosts: int | None = None, transfers: int = 5) -> list[tuple[str, str]]:
    fronts = site_fronts(NODES, REDIRECTORS)
    spec = MeasurementSpec("a-rdr", "b-rdr", protocol, 1, scope="site", hosts=hosts)
    request = site_request(spec, fronts, transfers, 1 << 20)
    return [(s.name, d.name) for s, d in (request.lane(i) for i in range(transfers))]


def test_https_and_root_copies_go_front_to_front() -> None:
    assert set(lanes("https")) == set(lanes("root")) == {("a-rdr", "b-rdr")}


def test_gridftp_copies_rotate_over_each_sites_hosts_like_dns_round_robin() -> None:
    assert lanes("gridftp") == [("a-1", "b-1"), ("a-2", "b-2"), ("a-3", "b-1"),
                                ("a-1", "b-2"), ("a-2", "b-1")]  # fmt: skip


def test_a_sweep_point_spreads_the_copies_over_m_host_pairs() -> None:
    assert lanes("https", hosts=1) == [("a-1", "b-1")] * 5
    assert lanes("https", hosts=2) == [("a-1", "b-1"), ("a-2", "b-2")] * 2 + [("a-1", "b-1")]


def transfer(index: int, source_server: str | None = None) -> TransferRecord:
    now = datetime(2026, 11, 25, tzinfo=UTC)
    return TransferRecord(index, "https", "", "", 0.0, 1.0, now, now, 1, "success",
                          source_server=source_server)  # fmt: skip


def test_copies_addressed_to_hosts_name_them_and_learned_servers_stay() -> None:
    fronts = site_fronts(NODES, REDIRECTORS)
    sweep = site_request(MeasurementSpec("a-rdr", "b-rdr", "gridftp", 1, scope="site", hosts=2),
                         fronts, 4, 1)  # fmt: skip
    record = transfer(1)
    name_direct_servers(record, sweep)
    assert (record.source_server, record.destination_server) == ("10.99.1.2:2811", "10.99.1.5:2811")
    via_fronts = site_request(MeasurementSpec("a-rdr", "b-rdr", "https", 1, scope="site"),
                              fronts, 4, 1)  # fmt: skip
    learned = transfer(0, source_server="10.99.1.3:1094")
    name_direct_servers(learned, via_fronts)
    assert (learned.source_server, learned.destination_server) == ("10.99.1.3:1094", None)


def record(**fields: object) -> dict[str, object]:
    now = datetime(2026, 11, 25, tzinfo=UTC)
    return MeasurementRecord("u", None, "a-1", "b-1", "https", 8, 1, None, now, now, [],
                             **fields).to_json()  # type: ignore[arg-type]  # fmt: skip


def test_a_host_measurements_json_is_unchanged_without_sites() -> None:
    assert not {"scope", "hosts", "src_site", "dst_site"} & set(record())
    with_sites = record(src_site="a", dst_site="b")
    assert (with_sites["src_site"], with_sites["dst_site"]) == ("a", "b")
    assert "scope" not in with_sites
    site = record(scope="site", hosts=2, src_site="a", dst_site="b")
    assert (site["scope"], site["hosts"]) == ("site", 2)


def test_a_zone_label_is_no_reported_site() -> None:
    assert reported_site("us-east-1a") is None
    assert reported_site("ucsd") == "ucsd"
    assert reported_site(None) is None


def test_site_settings() -> None:
    settings = load_settings({"scope": "site", "sweep_hosts": True}, env={})
    assert (settings.scope, settings.sweep_hosts, settings.lookups) == ("site", True, False)
    with pytest.raises(UserError, match="--sweep-hosts measures sites: give --scope site"):
        load_settings({"sweep_hosts": True}, env={})
    with pytest.raises(UserError, match="scope: sites is not one of host, site"):
        load_settings({"scope": "sites"}, env={})
    plan = CampaignSettings(protocols=("https",), streams=(1,), scope="site").plan(
        ["a-rdr", "b-rdr"]
    )
    assert [(s.src, s.scope) for s in plan] == [("a-rdr", "site"), ("b-rdr", "site")]

"""Redirector lookups without servers: what is planned for a lab, the record's JSON (the
"lookup" kind's contract), and a lookup that cannot connect being a failure record."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement.lookup import (
    LookupRecord,
    LookupStep,
    level_of,
    plan_lookups,
    run_lookup,
    server_names,
)
from orchestrator.measurement.lookup_root import root_outcome, steps_of

PORTS = {"https": 1094, "root": 1094}
GLOBAL = Endpoint(name="global", address="10.99.1.18", ports=PORTS, redirector=True)
REGIONAL = Endpoint(
    name="regional", address="10.99.1.14", ports=PORTS, redirector=True,
    rtt_targets_ms={"a-1": 30.0, "a-2": 30.0},
)  # fmt: skip
A_RDR = Endpoint(name="a-rdr", address="10.99.2.2", ports=PORTS, site="a", redirector=True)
B_RDR = Endpoint(name="b-rdr", address="10.99.3.2", ports=PORTS, site="b", redirector=True)
HOSTS = [
    Endpoint(name="a-1", address="10.99.2.11", ports=PORTS, site="a"),
    Endpoint(name="a-2", address="10.99.2.12", ports=PORTS, site="a"),
    Endpoint(name="b-1", address="10.99.3.11", ports=PORTS, site="b"),
]
CONTRACT_KEYS = [
    "uuid", "campaign", "protocol", "entry", "level", "site", "level_rtt_ms", "started",
    "seconds", "hops", "steps", "data_server", "outcome", "error_class", "message",
]  # fmt: skip


def test_each_site_is_looked_up_from_its_manager_and_each_level_above() -> None:
    plans = plan_lookups([GLOBAL, REGIONAL, A_RDR, B_RDR], HOSTS, repeat=2)
    got = [(p.site, p.level, p.entry.name, p.holder.name, p.level_rtt_ms) for p in plans]
    assert got == [
        ("a", "local", "a-rdr", "a-1", 0.0), ("a", "local", "a-rdr", "a-2", 0.0),
        ("a", "regional", "regional", "a-1", 30.0), ("a", "regional", "regional", "a-2", 30.0),
        ("a", "global", "global", "a-1", None), ("a", "global", "global", "a-2", None),
        ("b", "local", "b-rdr", "b-1", 0.0), ("b", "local", "b-rdr", "b-1", 0.0),
        ("b", "regional", "regional", "b-1", None), ("b", "regional", "regional", "b-1", None),
        ("b", "global", "global", "b-1", None), ("b", "global", "global", "b-1", None),
    ]  # fmt: skip
    given = plan_lookups(
        [GLOBAL, A_RDR], HOSTS, level_rtts={"global": {"a": 60.0}}, entry="global", site="a"
    )
    assert [(p.entry.name, p.site, p.level_rtt_ms) for p in given] == [("global", "a", 60.0)]
    assert plans[0].names["10.99.2.12:1094"] == "a-2:1094"


def test_another_sites_manager_is_no_level_of_a_site() -> None:
    assert level_of(B_RDR, "a") is None
    assert (level_of(A_RDR, "a"), level_of(REGIONAL, "b"), level_of(GLOBAL, "a")) == (
        "local", "regional", "global"
    )  # fmt: skip
    assert server_names([A_RDR]) == {"10.99.2.2:1094": "a-rdr:1094"}


def test_the_record_is_the_lookup_contract() -> None:
    record = LookupRecord(
        uuid="u-1", protocol="https", entry="regional", level="regional", site="a",
        level_rtt_ms=30.0, started=datetime(2026, 11, 25, 10, 0, 1, 500000, tzinfo=UTC),
        seconds=0.0812345678, hops=2,
        steps=(LookupStep("regional:1094", 0.04), LookupStep("a-rdr:1094", 0.03),
               LookupStep("a-2:1094", 0.011)),
        data_server="a-2:1094", outcome="success",
    )  # fmt: skip
    data = record.to_json()
    assert list(data) == CONTRACT_KEYS
    assert data["started"] == "2026-11-25T10:00:01.500000Z"
    assert data["seconds"] == 0.081235 and data["campaign"] is None
    assert data["steps"][1] == {"server": "a-rdr:1094", "seconds": 0.03}
    assert (data["error_class"], data["message"]) == (None, "")
    assert record.seconds_per_hop == 0.0812345678 / 2


def test_a_lookup_that_cannot_connect_is_a_failure_record(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = _client(tmp_path)
    holder = Endpoint(name="a-1", address="127.0.0.1", ports={"https": port}, site="a")
    entry = Endpoint(name="a-rdr", address="127.0.0.1", ports={"https": port}, site="a")
    [plan] = plan_lookups([entry], [holder])
    record = run_lookup(plan, client, campaign="c-1")
    assert (record.outcome, record.error_class, record.seconds) == ("failure", "connect", None)
    assert "putting the fresh file on a-1" in record.message
    assert record.to_json()["campaign"] == "c-1"


def _client(tmp_path: Path) -> ClientCredentials:
    from ca.authority import CertificateAuthority

    ca = CertificateAuthority.init(tmp_path / "ca")
    issued = ca.issue_client("orchestrator")
    return ClientCredentials(cert=issued.cert, key=issued.key, certdir=ca.certdir)


LOG = """\
[2026-11-25 10:32:16.714898 +0000][Debug  ][ExDbgMsg          ] [10.99.1.18:1094] MsgHandler created: 0x9beb7480 (message: kXR_stat (path: /n, flags: none) ).
[2026-11-25 10:32:16.715017 +0000][Debug  ][PostMaster        ] Creating new channel to: root://10.99.1.18:1094/
[2026-11-25 10:32:16.975997 +0000][Debug  ][ExDbgMsg          ] [10.99.1.14:1094] Retry at server MsgHandler: 0x9beb7480 (message: kXR_stat (path: /n, flags: none) ).
[2026-11-25 10:32:17.000000 +0000][Debug  ][ExDbgMsg          ] [10.99.1.14:1094] Retry at server MsgHandler: 0x9beb7480 (message: kXR_stat (path: /n, flags: none) ).
[2026-11-25 10:32:17.094417 +0000][Debug  ][ExDbgMsg          ] [10.99.2.2:1094] Retry at server MsgHandler: 0x9beb7480 (message: kXR_stat (path: /n, flags: none) ).
[2026-11-25 10:32:17.188429 +0000][Debug  ][ExDbgMsg          ] [10.99.2.11:1094] Retry at server MsgHandler: 0x9beb7480 (message: kXR_stat (path: /n, flags: none) ).
[2026-11-25 10:32:17.363305 +0000][Debug  ][ExDbgMsg          ] [10.99.2.11:1094] Calling MsgHandler: 0x9beb7480 (message: kXR_stat (path: /n, flags: none) ) with status: [SUCCESS] .
"""  # noqa: E501


def test_root_steps_are_read_from_xrdcls_log_a_wait_at_one_server_being_one_step() -> None:
    names = server_names([GLOBAL, REGIONAL, A_RDR, *HOSTS])
    steps, success = steps_of(LOG, names)
    assert success
    assert [server for server, _ in steps] == [
        "global:1094", "regional:1094", "a-rdr:1094", "a-1:1094"
    ]  # fmt: skip
    assert [round(seconds, 6) for _, seconds in steps] == [0.261099, 0.118420, 0.094012, 0.174876]
    failed, success = steps_of(LOG.replace("[SUCCESS]", "[ERROR] Server responded with an error: [3011] No servers are available to read the file."), names)  # fmt: skip  # noqa: E501
    assert not success and len(failed) == 4
    outcome = root_outcome(54, False, "[FATAL] Server responded with an error: [3011] no file\n")
    assert outcome["error_class"] == "not-found"
    assert root_outcome(0, True, "")["error_class"] == "timeout"

"""A campaign's rules, with fake nodes and an instant measurement (no lab): a stop and its
grace period, failed discovery, too few nodes, vanished nodes, a crashing measurement, one RTT
and one link baseline per ordered pair, and node-disjoint measurements running at once."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from orchestrator.campaign.run import Campaign
from orchestrator.campaign.settings import CampaignSettings
from orchestrator.endpoints import Endpoint
from orchestrator.measurement.spec import MeasurementRequest
from orchestrator.prelim.baseline import Baseline
from tests.support.campaign_doubles import CollectingReporter, instant_measurement

SMALL = CampaignSettings(protocols=("https",), streams=(1,), transfers=1, file_size=1024)


class Fixed:
    """Discovery with these nodes; `drop` leaves a node out from the `after`-th call on."""

    def __init__(self, names: str, drop: str = "", after: int = 0, netns: bool = False) -> None:
        self.nodes = [
            Endpoint(name=n, address="127.0.0.1", netns=f"ns-{n}" if netns else None) for n in names
        ]
        self.drop, self.after, self.calls = drop, after, 0

    def discover(self) -> list[Endpoint]:
        self.calls += 1
        gone = self.drop if self.after and self.calls >= self.after else ""
        return [n for n in self.nodes if n.name != gone]


class WithUnready(Fixed):
    """Discovery that also knows of nodes it cannot measure (a NotReady node, say)."""

    def __init__(self, names: str, unready: dict[str, str]) -> None:
        super().__init__(names)
        self.unready = unready

    def not_ready(self) -> dict[str, str]:
        return dict(self.unready)


class Broken:
    def discover(self) -> list[Endpoint]:
        raise ConnectionError("the cluster API does not answer")


async def rtt_of(src: Endpoint, dst: Endpoint, port: int) -> float:
    return 1.5


def journal(home: Path, result_uuid: str) -> dict[str, Any]:
    return json.loads((home / "campaigns" / f"{result_uuid}.json").read_text())


def campaign(settings: CampaignSettings, discovery: Any, home: Path, **kw: Any) -> Campaign:
    kw.setdefault("measure", instant_measurement)
    kw.setdefault("rtt", rtt_of)
    kw.setdefault("reporter", CollectingReporter())
    return Campaign(settings, discovery=discovery, home=home, **kw)


@pytest.mark.parametrize("grace", [None, 0.0], ids=["running-finish", "cancelled-at-once"])
def test_a_stop_starts_nothing_new_and_the_grace_period_ends_the_running(
    tmp_path: Path, grace: float | None
) -> None:
    stop = threading.Event()
    cancelled: list[str] = []

    async def stops_then_waits(request, **kw):
        stop.set()  # as SIGTERM would, in the middle of this measurement
        if grace is None:
            await asyncio.sleep(0)
            return instant_measurement(request, **kw)
        try:
            await asyncio.Event().wait()  # a transfer that would go on
        except asyncio.CancelledError:
            cancelled.append(request.src.name)
            raise

    reporter = CollectingReporter()
    settings = CampaignSettings(**{**SMALL.__dict__, "stop_grace": grace})
    run = campaign(settings, Fixed("abc"), tmp_path, measure=stops_then_waits, reporter=reporter)
    result = run.run(stop)
    assert result.state == "interrupted" and result.total == 6
    kept = journal(tmp_path, result.uuid)
    assert kept["state"] == "interrupted" and reporter.states[-1] == "interrupted"
    if grace is None:  # the running measurement finished, and is reported
        assert len(reporter.measurements) == len(result.measurements) == 1
        assert kept["finished_measurements"] == [reporter.measurements[0]["uuid"]]
        assert cancelled == []
    else:  # cancelled: not a finished measurement, not reported
        assert reporter.measurements == result.measurements == []
        assert kept["finished_measurements"] == [] and len(cancelled) == 1


def test_failed_discovery_is_a_failed_campaign(tmp_path: Path) -> None:
    reporter = CollectingReporter()
    result = campaign(SMALL, Broken(), tmp_path, reporter=reporter).run()
    assert (result.state, result.total) == ("failed", 0)
    assert result.message == "discovery failed: the cluster API does not answer"
    assert reporter.states == ["running", "failed"]
    assert journal(tmp_path, result.uuid)["state"] == "failed"


def test_fewer_than_two_nodes_is_a_failed_campaign(tmp_path: Path) -> None:
    result = campaign(SMALL, Fixed("a"), tmp_path).run()
    assert (result.state, result.nodes) == ("failed", ["a"])
    assert result.message == "a campaign needs at least 2 ready nodes, discovery found 1"


def test_a_vanished_node_fails_its_remaining_measurements_as_connect(tmp_path: Path) -> None:
    settings = CampaignSettings(**{**SMALL.__dict__, "rediscover_every": 0.0})
    discovery = Fixed("abc", drop="b", after=3)  # the start, one measurement, then b is gone
    result = campaign(settings, discovery, tmp_path).run()
    assert result.state == "finished" and len(result.measurements) == 6
    vanished = [m for m in result.measurements if m["failed"]]
    assert vanished and all("b" in (m["src"], m["dst"]) for m in vanished)
    for m in vanished:
        assert {t["error_class"] for t in m["transfers"]} == {"connect"}
        assert m["transfers"][0]["message"].startswith("node b is no longer ready")
    assert sum(1 for m in result.measurements if m["failed"] == 0) == 6 - len(vanished)


def test_a_node_known_but_not_ready_stays_in_the_plan_as_failures_with_its_reason(
    tmp_path: Path,
) -> None:
    reporter = CollectingReporter()
    why = "node c is NotReady: Kubelet stopped posting node status."
    result = campaign(SMALL, WithUnready("ab", {"c": why}), tmp_path, reporter=reporter).run()
    assert (result.state, result.nodes, result.total) == ("finished", ["a", "b", "c"], 6)
    failed = [m for m in reporter.measurements if m["failed"]]
    assert sorted((m["src"], m["dst"]) for m in failed) == [
        ("a", "c"), ("b", "c"), ("c", "a"), ("c", "b")
    ]  # fmt: skip
    assert {m["transfers"][0]["message"] for m in failed} == {why}
    assert {m["transfers"][0]["error_class"] for m in failed} == {"connect"}
    assert len(reporter.measurements) == 6  # nothing lost, nothing attempted on c


def test_one_ready_node_and_one_not_ready_fails_the_campaign_saying_why(tmp_path: Path) -> None:
    why = "node b is NotReady: Kubelet stopped posting node status."
    result = campaign(SMALL, WithUnready("a", {"b": why}), tmp_path).run()
    assert result.state == "failed"
    assert result.message == f"a campaign needs at least 2 ready nodes, discovery found 1; {why}"


def test_a_crashing_measurement_is_a_failed_record(tmp_path: Path) -> None:
    async def crashes(request, **kw):
        src, dst = request.src, request.dst
        if (src.name, dst.name) == ("a", "b"):
            raise KeyError("no such tool")
        return instant_measurement(request, **kw)

    result = campaign(SMALL, Fixed("ab"), tmp_path, measure=crashes).run()
    assert result.state == "finished" and len(result.measurements) == 2
    (crashed,) = [m for m in result.measurements if m["failed"]]
    assert (crashed["src"], crashed["dst"], crashed["failed"]) == ("a", "b", 1)
    assert {t["error_class"] for t in crashed["transfers"]} == {"remote-failure"}
    message = crashed["transfers"][0]["message"]
    assert message == "orchestrator error while measuring: KeyError: 'no such tool'"


def test_one_rtt_and_one_link_baseline_per_ordered_pair(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []
    measured: list[tuple[str, str]] = []
    events: list[str] = []

    async def rtt(src: Endpoint, dst: Endpoint, port: int) -> float:
        asked.append((src.name, dst.name))
        return 2.5

    def link(
        src: Endpoint, dst: Endpoint, *, campaign: str, streams: int, seconds: int, omit: int
    ) -> Baseline:
        events.append(f"baseline {src.name}->{dst.name}")
        measured = Baseline(src.name, dst.name, streams, seconds, campaign, omit_s=omit)
        measured.throughput_gbps = 9.0
        return measured

    def measure(request, **kw):
        src, dst = request.src, request.dst
        measured.append((src.name, dst.name))
        events.append(f"measure {src.name}->{dst.name}")
        return instant_measurement(request, **kw)

    reporter = CollectingReporter()
    settings = CampaignSettings(
        protocols=("https", "gridftp"), streams=(8, 1), transfers=3, file_size=1024,
        baseline=True, baseline_seconds=3, baseline_omit=1,
    )  # fmt: skip
    run = campaign(
        settings, Fixed("abc", netns=True), tmp_path,
        rtt=rtt, link_baseline=link, measure=measure, reporter=reporter,
    )  # fmt: skip
    result = run.run()
    assert result.state == "finished" and len(result.measurements) == 24
    pairs = sorted(set(measured))
    assert sorted(asked) == pairs and len(pairs) == 6
    assert all(m["rtt_ms"] == 2.5 for m in result.measurements)
    baselines = [r for kind, r in reporter.results if kind == "baseline"]
    assert sorted((b["src"], b["dst"]) for b in baselines) == pairs
    assert all(b["campaign"] == result.uuid and b["duration_s"] == 3 for b in baselines)
    # as many streams as the busiest measurement (3 transfers x 8 streams), 1 s left out
    assert {(b["streams"], b["omit_s"]) for b in baselines} == {(24, 1)}
    for src, dst in pairs:  # the link first, while both nodes are reserved
        first = events.index(f"measure {src}->{dst}")
        assert events.index(f"baseline {src}->{dst}") == first - 1


def test_a_baseline_without_network_namespaces_fails_the_campaign(tmp_path: Path) -> None:
    settings = CampaignSettings(**{**SMALL.__dict__, "baseline": True})
    result = campaign(settings, Fixed("ab"), tmp_path).run()
    assert result.state == "failed" and "a has none" in result.message


def test_parallel_pairs_run_at_once_on_one_event_loop(tmp_path: Path) -> None:
    in_flight = [0, 0]  # now, max
    loops: set[int] = set()

    async def measure(request, **kw):
        loops.add(id(asyncio.get_running_loop()))
        in_flight[0] += 1
        in_flight[1] = max(in_flight)
        for _ in range(3):  # the other pair's measurement gets its turn meanwhile
            await asyncio.sleep(0)
        in_flight[0] -= 1
        return instant_measurement(request, **kw)

    settings = CampaignSettings(**{**SMALL.__dict__, "max_parallel_pairs": 2})
    progress: list[int] = []
    run = campaign(
        settings,
        Fixed("abcd"),
        tmp_path,
        measure=measure,
        progress=lambda p: progress.append(p.done),
    )
    result = run.run()
    assert result.state == "finished" and len(result.measurements) == 12
    assert in_flight[1] == 2 and len(loops) == 1
    assert progress == list(range(1, 13))
    assert len(journal(tmp_path, result.uuid)["finished_measurements"]) == 12


def test_a_requested_uuid_is_kept_and_a_campaign_runs_once(tmp_path: Path) -> None:
    wanted = str(uuid.uuid4())
    run = campaign(SMALL, Fixed("ab"), tmp_path, uuid=wanted)
    assert run.run().uuid == wanted
    assert {m["campaign"] for m in run.result.measurements} == {wanted}
    with pytest.raises(RuntimeError, match="already run"):
        run.run()


def test_settings_count_the_measurements_of_a_pair() -> None:
    settings = CampaignSettings(protocols=("https", "gridftp", "root"), streams=(8, 4, 1))
    assert settings.per_pair == 9
    assert len(settings.plan(["a", "b", "c"])) == 6 * 9


def test_checksum_is_a_dimension_each_measurement_carries(tmp_path: Path) -> None:
    settings = CampaignSettings(
        protocols=("https", "gridftp"), streams=(1,), checksums=("none", "adler32"), transfers=1,
        file_size=1024,
    )  # fmt: skip
    assert settings.per_pair == 4
    plan = settings.plan(["a", "b"])
    assert [s.key for s in plan if (s.src, s.dst) == ("a", "b")] == [
        "a->b/https/1", "a->b/https/1/adler32", "a->b/gridftp/1", "a->b/gridftp/1/adler32",
    ]  # fmt: skip
    result = campaign(settings, Fixed("ab"), tmp_path, measure=instant_measurement).run()
    assert result.state == "finished"
    assert sorted((m["protocol"], m["checksum"]) for m in result.measurements) == sorted(
        2 * [("https", "none"), ("https", "adler32"), ("gridftp", "none"), ("gridftp", "adler32")]
    )
    assert journal(tmp_path, result.uuid)["checksums"] == ["none", "adler32"]


def test_a_checksum_step_no_tool_can_take_is_left_out_of_the_plan_with_why() -> None:
    settings = CampaignSettings(
        protocols=("root",), streams=(1,), auths=("token",), clients=("gfal2",),
        checksums=("none", "adler32"),
    )  # fmt: skip
    assert [s.key for s in settings.plan(["a", "b"])] == [
        "a->b/root/1/token/gfal2", "b->a/root/1/token/gfal2",
    ]  # fmt: skip
    assert settings.unsupported() == [
        "root by the gfal2 client with token and checksum adler32: XrdCl 5.5 asks for the "
        "digests without the URL's token, which the server refuses"
    ]


def test_auth_and_client_are_dimensions_and_what_no_tool_can_run_is_left_out(
    tmp_path: Path,
) -> None:
    settings = CampaignSettings(
        protocols=("https", "gridftp"),
        streams=(1,),
        auths=("x509", "token"),
        clients=("native", "gfal2"),
        transfers=1,
        file_size=1024,
    )
    # https: x509 and token, native and gfal2; gridftp: x509 native/gfal2, never token
    assert settings.per_pair == 6
    assert any("gridftp by the native client with token" in why for why in settings.unsupported())
    asked: list[tuple[str, str, str]] = []

    def measure(request: MeasurementRequest, **kw: Any) -> Any:
        asked.append((request.spec.protocol, request.spec.auth, request.spec.client))
        return instant_measurement(request, **kw)

    result = campaign(settings, Fixed("ab"), tmp_path, measure=measure).run()
    assert result.state == "finished" and len(result.measurements) == 2 * 6
    assert sorted(set(asked)) == [
        ("gridftp", "x509", "gfal2"),
        ("gridftp", "x509", "native"),
        ("https", "token", "gfal2"),
        ("https", "token", "native"),
        ("https", "x509", "gfal2"),
        ("https", "x509", "native"),
    ]
    assert journal(tmp_path, result.uuid)["auths"] == ["x509", "token"]


def test_a_measurement_that_could_not_run_keeps_its_auth_and_client(tmp_path: Path) -> None:
    def crash(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("a bug")

    settings = CampaignSettings(
        protocols=("https",), streams=(1,), auths=("token",), clients=("native",), transfers=1
    )
    result = campaign(settings, Fixed("ab"), tmp_path, measure=crash).run()
    assert {(m["auth"], m["client"]) for m in result.measurements} == {("token", "native")}

"""A link baseline without a lab: where iperf3 runs (two namespaces, or a server pod's iperf3
container through `run_in_pod`), the one command line both take, what is read from iperf3's
JSON report (recorded from real runs between two lab nodes, in data/), the options refused,
and failures kept as data."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from orchestrator.campaign.settings import load_settings
from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.prelim import baseline as module
from orchestrator.prelim.baseline import (
    DEFAULT_STREAMS,
    check_baseline_options,
    check_baseline_possible,
    link_streams,
    measure_baseline,
)

DATA = Path(__file__).with_name("data")
# iperf3 3.12 between two lab nodes (1 Gbit/s cap): 4 streams, 3 s after 1 s left out
REPORT = (DATA / "iperf3_client.json").read_text()
REFUSED = (DATA / "iperf3_refused.json").read_text()  # no server on that port
REPORT_GBPS, REPORT_RETRANSMITS = 0.937138, 32599  # end.sum_received, end.sum_sent

POD_A = Endpoint("a", "10.1.0.11", ports={"https": 8443, "iperf3": 5301}, pod="tpc/xrootd-a")
POD_B = Endpoint("b", "10.1.0.12", ports={"https": 8443, "iperf3": 5302}, pod="tpc/xrootd-b")
NS_A = Endpoint("a", "10.99.41.2", netns="tpcba-lab-1")
NS_B = Endpoint("b", "10.99.42.2", netns="tpcba-lab-2")


class FakePods:
    """orchestrator.cluster.pod_exec, as helper code on a cluster would answer."""

    def __init__(self, answer: tuple[int, str, str] | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, list[str], float]] = []

    def run_in_pod(
        self, pod: str, container: str, argv: list[str], timeout: float
    ) -> tuple[int, str, str]:
        self.calls.append((pod, container, argv, timeout))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def pods(monkeypatch: pytest.MonkeyPatch):
    """Installs a FakePods as orchestrator.cluster.pod_exec; returns a function setting its
    answer."""

    def answer(with_: tuple[int, str, str] | Exception) -> FakePods:
        fake = FakePods(with_)
        exec_module = types.ModuleType("orchestrator.cluster.pod_exec")
        exec_module.run_in_pod = fake.run_in_pod  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "orchestrator.cluster.pod_exec", exec_module)
        return fake

    return answer


def test_on_kubernetes_the_client_runs_in_the_source_pod_against_the_destinations_server(
    pods,
) -> None:
    fake = pods((0, REPORT, ""))
    result = measure_baseline(POD_A, POD_B, campaign="c-1")
    [(pod, container, argv, timeout)] = fake.calls
    assert (pod, container) == ("tpc/xrootd-a", "iperf3")
    assert argv == [
        "iperf3", "--client", "10.1.0.12", "--port", "5302",
        "--parallel", "88", "--time", "10", "--omit", "2", "--json",
    ]  # fmt: skip
    assert timeout == 2 + 10 + 60 + 44  # and half a second per stream, to open them
    assert (result.src, result.dst, result.campaign, result.tool) == ("a", "b", "c-1", "iperf3")
    assert (result.streams, result.duration_s, result.omit_s) == (88, 10, 2)
    assert (result.throughput_gbps, result.retransmits, result.error) == (
        REPORT_GBPS,
        REPORT_RETRANSMITS,
        "",
    )
    assert result.finished is not None and result.finished >= result.started


def test_in_the_lab_the_same_options_run_in_the_namespaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One command line for both: the lab's adds only the source address to bind to."""
    started: list[list[str]] = []
    clients: list[list[str]] = []

    class Server:
        def __init__(self, argv: list[str], **_: Any) -> None:
            started.append(argv)
            self.stderr = None

        def poll(self) -> None:
            return None

        def kill(self) -> None:
            pass

        def wait(self) -> int:
            return 0

    def client(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        clients.append(argv)
        return subprocess.CompletedProcess(argv, 0, REPORT, "")

    monkeypatch.setattr(module.subprocess, "Popen", Server)
    monkeypatch.setattr(module.subprocess, "run", client)
    monkeypatch.setattr(module, "listeners_in", lambda netns, ports: {ports[0]: "iperf3"})
    result = measure_baseline(NS_A, NS_B, streams=16, seconds=5, omit=1)
    assert started == [
        ["ip", "netns", "exec", "tpcba-lab-2", "iperf3", "--server", "--one-off",
         "--bind", "10.99.42.2", "--port", "5201"],
    ]  # fmt: skip
    assert clients == [
        ["ip", "netns", "exec", "tpcba-lab-1", "iperf3", "--client", "10.99.42.2",
         "--port", "5201", "--bind", "10.99.41.2",
         "--parallel", "16", "--time", "5", "--omit", "1", "--json"],
    ]  # fmt: skip
    assert (result.throughput_gbps, result.retransmits) == (REPORT_GBPS, REPORT_RETRANSMITS)
    assert (result.streams, result.duration_s, result.omit_s) == (16, 5, 1)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ((1, REFUSED, ""), "iperf3: unable to connect to server: Connection refused"),
        ((126, "", "exec: iperf3: not found"), "iperf3 printed no report: exec: iperf3: not found"),
        ((0, "[1, 2]", ""), "iperf3's report is not a JSON object"),
        ((0, '{"end": {}}', ""), "iperf3's report has no end.sum_received"),
        (UserError("pod tpc/xrootd-a is gone"), "iperf3 in tpc/xrootd-a could not run: UserError"),
        (TimeoutError("no answer in 72 s"), "iperf3 in tpc/xrootd-a could not run: TimeoutError"),
    ],
)
def test_what_goes_wrong_in_a_pod_is_a_failed_baseline(pods, answer, error: str) -> None:
    pods(answer)
    result = measure_baseline(POD_A, POD_B, seconds=3, omit=1)
    assert result.error.startswith(error), result.error
    assert result.throughput_gbps is None and result.retransmits is None
    assert result.finished is not None


def test_retransmits_are_none_where_iperf3_does_not_count_them(pods) -> None:
    pods((0, '{"end": {"sum_received": {"bits_per_second": 2.5e9}, "sum_sent": {}}}', ""))
    result = measure_baseline(POD_A, POD_B)
    assert (result.throughput_gbps, result.retransmits, result.error) == (2.5, None, "")


def test_both_ends_run_iperf3_the_same_way() -> None:
    check_baseline_possible(NS_A, NS_B)
    check_baseline_possible(POD_A, POD_B)
    with pytest.raises(UserError, match=r"network namespaces .* b has none: no network namespace"):
        check_baseline_possible(NS_A, Endpoint("b", "10.0.0.2"))
    no_port = Endpoint("b", "10.1.0.12", pod="tpc/xrootd-b")  # a chart without the sidecar
    with pytest.raises(UserError, match="b's pod tpc/xrootd-b has no iperf3 port"):
        check_baseline_possible(POD_A, no_port)
    with pytest.raises(UserError, match="the same way at both ends; a is in a netns, b in a pod"):
        check_baseline_possible(NS_A, POD_B)


def test_as_many_streams_as_the_measurement_up_to_iperf3s_maximum() -> None:
    assert DEFAULT_STREAMS == link_streams(11, 8) == 88
    assert link_streams(11, 1) == 11 and link_streams(20, 8) == 128 and link_streams(1, 1) == 1


@pytest.mark.parametrize(
    ("streams", "seconds", "omit", "message"),
    [
        (129, 10, 2, "1-128 streams"),
        (0, 10, 2, "1-128 streams"),
        (88, 0, 0, "1-3600 seconds"),
        (88, 2, 2, r"omit 2\) must be at least 0 and fewer than the seconds measured \(2\)"),
        (88, 10, -1, "omit -1"),
    ],
)
def test_impossible_options_are_refused_before_anything_runs(
    pods, streams: int, seconds: int, omit: int, message: str
) -> None:
    fake = pods((0, REPORT, ""))
    with pytest.raises(UserError, match=message):
        check_baseline_options(streams, seconds, omit)
    with pytest.raises(UserError, match=message):
        measure_baseline(POD_A, POD_B, streams=streams, seconds=seconds, omit=omit)
    assert fake.calls == []


def test_a_baseline_that_cannot_start_is_a_failed_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")  # no `ip` to enter the namespaces with
    result = measure_baseline(NS_A, NS_B, seconds=1, omit=0)
    assert result.throughput_gbps is None and result.finished
    assert result.error.startswith("iperf3 server on b could not be started:")


def test_the_campaigns_baseline_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Defaults 10 s after 2 s; the omitted seconds must leave some to measure."""
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path))  # no config file of the user's
    settings = load_settings({"baseline": "true"}, env={})
    assert (settings.baseline_seconds, settings.baseline_omit) == (10, 2)
    env = {"TPCBENCH_BASELINE_OMIT": "0", "TPCBENCH_BASELINE_SECONDS": "1"}
    assert load_settings({"baseline": True}, env=env).baseline_omit == 0
    with pytest.raises(UserError, match=r"baseline_omit \(3 s .*\) must be fewer than "):
        load_settings({"baseline": True, "baseline_seconds": "3", "baseline_omit": "3"}, env={})
    with pytest.raises(UserError, match="TPCBENCH_BASELINE_OMIT: baseline_omit: '-1' must be 0"):
        load_settings({}, env={"TPCBENCH_BASELINE_OMIT": "-1"})
    # without --baseline the two are not used, so not checked against each other
    assert load_settings({"baseline_seconds": "1"}, env={}).baseline_omit == 2

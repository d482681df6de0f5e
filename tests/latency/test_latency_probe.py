"""The cluster-side RTT probe: `python -m orchestrator.latency serve` as a real process.

Everything talks to 127.0.0.0/8 only: the probe, the targets it connects to, and the
orchestrator side that asks it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import select
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator import latency
from orchestrator.endpoints import Endpoint
from orchestrator.latency import (
    is_host,
    measure_rtt,
    measure_rtt_via_probe,
    position,
    probe_url,
    rtt_origin,
)
from tests.support.campaign_doubles import CollectingReporter, FixedDiscovery, instant_measurement

REPO = Path(__file__).resolve().parents[2]


@dataclass
class ProbeProcess:
    process: subprocess.Popen[str]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        """Status and JSON body; no proxies (the environment's must not see loopback)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(self.url + path, timeout=30) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.load(exc)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def start_probe(tmp_path: Path, *options: str) -> ProbeProcess:
    """The probe on a free port (--port 0: the kernel picks, the probe prints it)."""
    log = tmp_path / f"probe-{time.monotonic_ns()}.log"
    argv = [sys.executable, "-m", "orchestrator.latency", "serve", "--bind", "127.0.0.1"]
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [*argv, "--port", "0", *options],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=log_file,
            text=True,
        )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 30)
    line = process.stdout.readline() if ready else ""
    if not line.startswith("serving on http://127.0.0.1:"):
        process.kill()
        process.wait()
        pytest.fail(f"the probe did not start: {line!r} {log.read_text()}")
    port = int(line.strip().rstrip("/").rsplit(":", 1)[1])
    return ProbeProcess(process, port, log)


@pytest.fixture
def probe_factory(tmp_path: Path) -> Iterator[Callable[..., ProbeProcess]]:
    started: list[ProbeProcess] = []

    def factory(*options: str) -> ProbeProcess:
        started.append(start_probe(tmp_path, *options))
        return started[-1]

    yield factory
    for probe in started:
        probe.stop()


@pytest.fixture
def probe_service(probe_factory: Callable[..., ProbeProcess]) -> ProbeProcess:
    return probe_factory()


def listen(address: str = "127.0.0.1") -> socket.socket:
    return socket.create_server((address, 0), backlog=64)


@pytest.fixture
def listener() -> Iterator[int]:
    with listen() as server:
        yield server.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as spare:  # bound, never listening, then released
        spare.bind(("127.0.0.1", 0))
        return spare.getsockname()[1]


# -- the service -------------------------------------------------------------------------------


def test_healthz(probe_service: ProbeProcess) -> None:
    assert probe_service.get("/healthz") == (200, {"status": "ok"})


def test_rtt_to_a_listening_socket(probe_service: ProbeProcess, listener: int) -> None:
    status, body = probe_service.get(f"/rtt?host=127.0.0.1&port={listener}&samples=3")
    assert status == 200
    assert set(body) == {"host", "port", "rtt_ms", "samples", "error"}
    assert (body["host"], body["port"], body["error"]) == ("127.0.0.1", listener, None)
    assert len(body["samples"]) == 3 and all(s > 0 for s in body["samples"])
    assert body["rtt_ms"] > 0
    assert body["rtt_ms"] == statistics.median(body["samples"])


def test_default_sample_count_is_the_lab_probes(probe_service: ProbeProcess, listener: int) -> None:
    status, body = probe_service.get(f"/rtt?host=127.0.0.1&port={listener}")
    assert status == 200 and len(body["samples"]) == latency.DEFAULT_COUNT


def test_unreachable_target_is_data_not_an_http_error(
    probe_service: ProbeProcess, closed_port: int
) -> None:
    status, body = probe_service.get(f"/rtt?host=127.0.0.1&port={closed_port}&samples=2")
    assert status == 200
    assert body["rtt_ms"] is None and body["samples"] == []
    assert "refused" in body["error"].lower() and str(closed_port) in body["error"]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("port=80", "host"),
        ("host=&port=80", "host"),
        ("host=http://127.0.0.1/&port=80", "host"),
        ("host=127.0.0.1:80&port=80", "host"),
        ("host=127.1&port=80", "host"),
        ("host=-bad-.example&port=80", "host"),
        ("host=127.0.0.1", "port"),
        ("host=127.0.0.1&port=0", "port"),
        ("host=127.0.0.1&port=65536", "port"),
        ("host=127.0.0.1&port=eighty", "port"),
        ("host=127.0.0.1&port=-1", "port"),
        ("host=127.0.0.1&port=80&samples=0", "samples"),
        ("host=127.0.0.1&port=80&samples=21", "samples"),
        ("host=127.0.0.1&port=80&samples=1.5", "samples"),
        ("host=127.0.0.1&port=80&port=81", "port"),
        ("host=127.0.0.1&port=80&sample=3", "sample"),
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(
    probe_service: ProbeProcess, query: str, parameter: str
) -> None:
    status, body = probe_service.get(f"/rtt?{query}")
    assert status == 400
    assert body["parameter"] == parameter
    assert parameter in body["error"]


def test_unknown_path_is_404(probe_service: ProbeProcess) -> None:
    status, body = probe_service.get("/metrics")
    assert status == 404 and "/rtt" in body["error"]


def test_allow_list_refuses_targets_outside_it(
    probe_factory: Callable[..., ProbeProcess], listener: int
) -> None:
    probe = probe_factory("--allow", "127.0.0.2/32")
    with listen("127.0.0.2") as allowed:
        allowed_port = allowed.getsockname()[1]
        ok_status, ok = probe.get(f"/rtt?host=127.0.0.2&port={allowed_port}&samples=2")
    status, body = probe.get(f"/rtt?host=127.0.0.1&port={listener}&samples=2")
    by_name_status, by_name = probe.get(f"/rtt?host=localhost&port={listener}&samples=2")
    assert ok_status == 200 and ok["rtt_ms"] > 0
    assert status == 403 and body["parameter"] == "host" and "allow-list" in body["error"]
    assert by_name_status == 403, "a name is judged by the addresses it resolves to"
    assert by_name["parameter"] == "host"


def test_a_malformed_allow_option_is_refused_at_start() -> None:
    process = subprocess.run(
        [sys.executable, "-m", "orchestrator.latency", "serve", "--allow", "10.0.0.1/8"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 2 and "not a CIDR" in process.stderr


def test_sigterm_stops_the_probe_cleanly(probe_factory: Callable[..., ProbeProcess]) -> None:
    probe = probe_factory()
    assert probe.stop() == 0


def test_the_lab_command_line_still_works(listener: int) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "orchestrator.latency", "127.0.0.1", str(listener), "--count", "2"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    result = json.loads(process.stdout)
    assert process.returncode == 0
    assert set(result) == {"address", "port", "samples_ms", "rtt_ms"}
    assert len(result["samples_ms"]) == 2 and result["rtt_ms"] > 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10.1.2.3", True),
        ("::1", True),
        ("node-1.cluster.local", True),
        ("node-1.cluster.local.", True),
        ("localhost", True),
        ("2130706433", False),
        ("10.1", False),
        ("a b", False),
        ("a/b", False),
        ("a" * 64 + ".example", False),
        ("", False),
    ],
)
def test_targets_are_ip_literals_or_host_names(value: str, expected: bool) -> None:
    assert is_host(value) is expected


# -- the orchestrator side: where the RTT is measured from --------------------------------------

LAB = Endpoint(name="lab-1", address="10.99.1.2", netns="tpcb-1")
LAB_WITH_PROBE = Endpoint(
    name="lab-1", address="10.99.1.2", netns="tpcb-1", ports={"https": 8443, "probe": 9106}
)
CLUSTER = Endpoint(name="node-a", address="10.0.0.1", ports={"https": 8443, "probe": 9106})
BARE = Endpoint(name="node-b", address="10.0.0.2")


def test_selection_probe_then_netns_then_orchestrator() -> None:
    assert rtt_origin(LAB) == "netns"
    # a podman lab node runs the probe inside its namespace: the same position, and the
    # orchestrator (perhaps itself in a container) needs no `ip netns exec` to ask it
    assert rtt_origin(LAB_WITH_PROBE) == "probe"
    assert rtt_origin(CLUSTER) == "probe"
    assert rtt_origin(BARE) == "orchestrator"
    assert rtt_origin(BARE, exec_prefix=["kubectl", "exec", "p", "--"]) == "exec"
    assert rtt_origin(CLUSTER, exec_prefix=[]) == "exec", "an explicit prefix wins"


def test_probe_url_asks_the_source_node_about_the_destination() -> None:
    assert probe_url(CLUSTER, BARE, 1094, 5) == (
        "http://10.0.0.1:9106/rtt?host=10.0.0.2&port=1094&samples=5"
    )
    v6 = Endpoint(name="v6", address="fd00::1", ports={"probe": 9106})
    assert probe_url(v6, BARE, 8443).startswith("http://[fd00::1]:9106/rtt?")


def test_measure_rtt_goes_through_the_source_nodes_probe(
    probe_service: ProbeProcess, listener: int
) -> None:
    src = Endpoint(name="a", address="127.0.0.1", ports={"probe": probe_service.port})
    dst = Endpoint(name="b", address="127.0.0.1")
    rtt = asyncio.run(measure_rtt(src, dst, listener, count=3))
    assert isinstance(rtt, float) and rtt > 0
    assert probe_service.stop() == 0
    asked = probe_service.log.read_text()
    assert f"GET /rtt?host=127.0.0.1&port={listener}&samples=3" in asked


def test_the_probes_refusal_is_no_rtt_not_a_local_fallback(
    probe_factory: Callable[..., ProbeProcess], listener: int
) -> None:
    probe = probe_factory("--allow", "127.0.0.2/32")
    src = Endpoint(name="a", address="127.0.0.1", ports={"probe": probe.port})
    dst = Endpoint(name="b", address="127.0.0.1")
    # From here 127.0.0.1:listener is reachable; the probe refuses it, so there is no RTT.
    assert asyncio.run(measure_rtt(src, dst, listener, count=2)) is None


def test_a_probe_that_does_not_answer_gives_no_rtt(closed_port: int, listener: int) -> None:
    src = Endpoint(name="a", address="127.0.0.1", ports={"probe": closed_port})
    dst = Endpoint(name="b", address="127.0.0.1")
    assert asyncio.run(measure_rtt_via_probe(src, dst, listener, count=2)) is None


def test_from_the_orchestrator_it_measures_here_and_warns_once(
    listener: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(position, "_warned_from_orchestrator", threading.Event())
    src = Endpoint(name="a", address="127.0.0.1")
    dst = Endpoint(name="b", address="127.0.0.1")
    with caplog.at_level(logging.WARNING, logger="orchestrator.latency"):
        first = asyncio.run(measure_rtt(src, dst, listener, count=2))
        second = asyncio.run(measure_rtt(src, dst, listener, count=2))
    assert first is not None and first > 0 and second is not None and second > 0
    warnings = [r for r in caplog.records if "measured from the orchestrator" in r.getMessage()]
    assert len(warnings) == 1


# -- the campaign: the same entry point, and the mark on an RTT taken from here ----------------


@pytest.mark.parametrize("with_probe", [True, False])
def test_campaign_rtts_come_from_the_probe_or_are_marked(
    probe_service: ProbeProcess, listener: int, tmp_path: Path, with_probe: bool
) -> None:
    from orchestrator.campaign.run import Campaign
    from orchestrator.campaign.settings import CampaignSettings

    ports = {"https": listener, **({"probe": probe_service.port} if with_probe else {})}
    nodes = [Endpoint(name=f"node-{n}", address="127.0.0.1", ports=ports) for n in "ab"]
    reporter = CollectingReporter()
    result = Campaign(
        CampaignSettings(protocols=("https",), streams=(1,), transfers=1, file_size=1024),
        discovery=FixedDiscovery(nodes),
        reporter=reporter,  # type: ignore[arg-type]
        measure=instant_measurement,
        home=tmp_path,
    ).run()
    assert result.state == "finished" and len(reporter.measurements) == 2
    assert all(m["rtt_ms"] is not None and m["rtt_ms"] > 0 for m in reporter.measurements)
    marks = {m.get("rtt_from") for m in reporter.measurements}
    assert marks == ({None} if with_probe else {"orchestrator"})
    assert probe_service.stop() == 0
    asked = probe_service.log.read_text().count("GET /rtt?")
    assert asked == (2 if with_probe else 0)

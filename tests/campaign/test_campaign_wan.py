"""A campaign on an emulated WAN, end to end: a real 3-node lab with RTTs of 10, 30 and 60 ms
and 5 Gbit/s links, `tpcbench campaign run` as a process, the real webapp (gunicorn +
PostgreSQL). The stored RTTs are the targets' (1 ms or 5%), throughput falls with RTT (the
API's fitted slope is negative) and the grid's thresholds are fractions of the links."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.lab import LabNetwork
from orchestrator.lab.temporary import temporary_lab
from orchestrator.lab.wan_profile import TcpSettings
from orchestrator.latency.target import rtt_within_target
from tests.support.real_webapp import REPO, RealWebapp, serving_webapp

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]
NETWORK = LabNetwork(prefix="tpcwc", subnet_offset=110)
MATRIX = "src,dst,rtt_ms\nlab-1,lab-2,10\nlab-1,lab-3,30\nlab-2,lab-3,60\n"
TARGETS = {("lab-1", "lab-2"): 10.0, ("lab-1", "lab-3"): 30.0, ("lab-2", "lab-3"): 60.0}
# Small buffers: one stream is window-limited, as on the paper's 100 Gbit/s links.
TCP = TcpSettings(buffer_max=256 << 10)


@pytest.fixture(scope="module")
def wan_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    matrix = tmp_path_factory.mktemp("wan") / "wan.csv"
    matrix.write_text(MATRIX)
    with temporary_lab(
        "tpcbench-wancampaign-", 3, 4 << 20, network=NETWORK, rtt=str(matrix), tcp=TCP,
        rate_gbit=5.0,
    ) as (home, _):  # fmt: skip
        yield home


@pytest.fixture(scope="module")
def webapp() -> Iterator[RealWebapp]:
    with serving_webapp("tpcbench-wanweb-") as app:
        yield app


def test_campaign_stores_checked_rtts_and_throughput_falls_with_rtt(
    wan_lab: Path, webapp: RealWebapp, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "TPCBENCH_HOME": str(tmp_path),
        "TPCBENCH_API_TOKEN": webapp.token,
        "PYTHONPATH": str(REPO),
        "COLUMNS": "200",
    }
    inventory = str(wan_lab / "lab" / "inventory.json")
    run = subprocess.run(
        [
            sys.executable, "-m", "orchestrator", "campaign", "run", "--inventory", inventory,
            "--report-to", webapp.url, "--protocols", "https,gridftp", "--streams", "1",
            "--transfers", "2", "--transfer-timeout", "120", "--baseline",
            "--baseline-seconds", "1", "--baseline-omit", "0",
        ],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RTT check: 6/6 pairs within 1 ms or 5% of their target" in run.stderr
    assert "target" in run.stdout  # the summary table shows each pair's target

    rows = webapp.query(
        "SELECT s.name, d.name, m.protocol, m.rtt_ms, m.rtt_target_ms, m.throughput_gbps "
        "FROM results_measurement m JOIN results_node s ON s.id = m.src_id "
        "JOIN results_node d ON d.id = m.dst_id"
    )
    assert len(rows) == 12
    for src, dst, _, rtt_ms, target_ms, throughput in rows:
        expected = TARGETS.get((src, dst)) or TARGETS[(dst, src)]
        assert target_ms == expected
        assert rtt_within_target(rtt_ms, target_ms), (src, dst, rtt_ms, target_ms)
        assert throughput is not None and throughput > 0

    client = httpx.Client(base_url=webapp.url, trust_env=False, timeout=30)
    for protocol in ("https", "gridftp"):
        answer = client.get(
            "/api/v1/throughput-vs-latency/",
            params={"protocol": protocol, "streams": 1, "window": "latest"},
        ).json()
        assert len(answer["points"]) == 6
        assert answer["fits"][protocol]["slope_gbps_per_ms"] < 0, answer

    (campaign,) = client.get("/api/v1/campaigns/").json()["results"]
    assert len(campaign["rtt_checks"]) == 6 and campaign["rtt_off"] == 0  # kept with it

    # --baseline: each ordered pair's link, before its transfers, read back as a fraction
    baselines = client.get("/api/v1/baselines/", params={"campaign": campaign["uuid"]}).json()
    every_ordered_pair = sorted([*TARGETS, *((d, s) for s, d in TARGETS)])
    assert sorted((b["src"], b["dst"]) for b in baselines["results"]) == every_ordered_pair
    assert all(b["throughput_gbps"] > 0 and b["duration_s"] == 1 for b in baselines["results"])
    measured = client.get("/api/v1/measurements/", params={"limit": 100}).json()["results"]
    assert all(m["baseline_gbps"] is not None for m in measured)
    assert all(m["baseline_fraction"] > 0 for m in measured)

    nodes = client.get("/api/v1/nodes/").json()["results"]
    assert {n["name"]: n["link_gbps"] for n in nodes} == {f"lab-{i}": 5.0 for i in (1, 2, 3)}
    grid = client.get("/maddash/grids/https").json()
    assert grid["statusLabels"][0] == "Throughput >= 1.5 Gbps (5 Gbit/s links)"

"""The link baseline measures the link: on a real lab whose nodes' links are capped at 1 Gbit/s
(tbf), with an emulated WAN of 10 ms and 60 ms between them, `tpcbench baseline` (88 streams,
slow start left out) reads within 10% of the cap at both RTTs.

iperf3 counts payload bytes while tbf counts frames (Ethernet, IP and TCP headers: about 4%
less payload than the cap), which is inside the 10%. The machine is shared, so each pair's
figure is the median of three baselines.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.lab import LabInventory, LabNetwork
from orchestrator.lab.temporary import temporary_lab

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]
NETWORK = LabNetwork(prefix="tpcba", subnet_offset=40)  # 10.99.40-43.0/24
CAP_GBIT = 1.0
MATRIX = "rtt_ms:\n  lab-1: {lab-2: 10ms, lab-3: 60ms}\n  lab-2: {lab-3: 60ms}\n"
PAIRS = {10: ("lab-1", "lab-2"), 60: ("lab-1", "lab-3")}
TRIES = 3


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, LabInventory]]:
    matrix = tmp_path_factory.mktemp("wan") / "rtt.yaml"
    matrix.write_text(MATRIX)
    options = {"network": NETWORK, "rate_gbit": CAP_GBIT, "rtt": str(matrix)}
    with temporary_lab("tpcbench-baseline-link-", 3, 1 << 20, **options) as started:
        yield started


def baseline(home: Path, src: str, dst: str) -> dict:
    env = {**os.environ, "TPCBENCH_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "baseline", "--src", src, "--dst", dst,
         "--seconds", "5", "--omit", "2", "--json"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("rtt_ms", sorted(PAIRS))
def test_the_baseline_reads_the_links_cap(lab: tuple[Path, LabInventory], rtt_ms: int) -> None:
    home, _ = lab
    src, dst = PAIRS[rtt_ms]
    results = [baseline(home, src, dst) for _ in range(TRIES)]
    for result in results:
        assert (result["streams"], result["duration_s"], result["omit_s"]) == (88, 5, 2)
        assert result["error"] == "" and result["retransmits"] is not None
    figures = [result["throughput_gbps"] for result in results]
    # on a failure, say how far behind the delay program was (a busy machine, docs/prelim.md)
    delay = json.loads((home / "lab" / "delayline.json").read_text())
    lateness = {k: delay[k] for k in ("late_mean_us", "late_max_us", "late_max_ever_us")}
    retransmits = [result["retransmits"] for result in results]
    assert 0.9 * CAP_GBIT <= statistics.median(figures) <= 1.1 * CAP_GBIT, (
        rtt_ms,
        figures,
        retransmits,
        lateness,
    )

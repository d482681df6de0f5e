"""The preliminary benchmarks on a real lab: `tpcbench prelim concurrency|filesize` and
`tpcbench baseline`, as processes, their results' shape and sanity, and the memory guard.
tests/prelim/test_baseline_link.py checks the baseline's figure against a capped link."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.errors import UserError
from orchestrator.lab import LabNetwork
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.temporary import temporary_lab
from orchestrator.prelim.memory import MemoryBudget, check_fits
from tests.support.real_webapp import RealWebapp, serving_webapp

pytestmark = pytest.mark.lab
NETWORK = LabNetwork(prefix="tpcbp", subnet_offset=190)  # 10.99.191-192.0/24
MiB = 1 << 20


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with temporary_lab("tpcbench-prelim-", 2, 8 * MiB, network=NETWORK) as (home, _):
        yield home


@pytest.fixture(scope="module")
def webapp() -> Iterator[RealWebapp]:
    with serving_webapp("tpcbench-prelimweb-") as app:
        yield app


def tpcbench(home: Path, *args: str, token: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TPCBENCH_HOME": str(home), "TPCBENCH_API_TOKEN": token}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip


def test_concurrency_gives_one_point_per_method_and_level(home: Path, webapp: RealWebapp) -> None:
    done = tpcbench(home, "prelim", "concurrency", "--node", "lab-2", "--max", "3",
                    "--file-size", "32MiB", "--json", "--report-to", webapp.url,
                    token=webapp.token)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["kind"] == "concurrency" and run["node"] == "lab-2"
    points = run["points"]
    keys = sorted((p["method"], p["concurrency"]) for p in points)
    assert keys == sorted((m, n) for m in ("cp", "https", "gridftp") for n in (1, 2, 3))
    for point in points:
        assert point["file_size"] == 32 * MiB
        assert (point["succeeded"], point["failed"]) == (point["concurrency"], 0), point
        assert point["throughput_gbps"] > 0 and point["makespan_gbps"] > 0
    for level in (1, 2, 3):
        rate = {p["method"]: p["throughput_gbps"] for p in points if p["concurrency"] == level}
        # a memory-to-memory copy on one node is the ceiling the TPC methods stay under
        assert rate["cp"] >= max(rate["https"], rate["gridftp"]), rate
    # the run's servers are gone again, the lab's own still serve
    record = LabRun.load(home / "lab" / "run.json")
    assert {p.node for p in record.processes} == {"lab-1", "lab-2"}
    assert not [d for d in record.data_dirs if "prelim" in d]
    assert not list(Path(record.data_dirs[0]).parent.glob("*prelim*"))
    assert tpcbench(home, "lab", "status").returncode == 0
    # and the run landed in the webapp, every point of it
    stored = webapp.query(
        "SELECT p.method, p.concurrency, p.throughput_gbps FROM results_prelimpoint p "
        "JOIN results_prelimrun r ON r.id = p.run_id WHERE r.uuid = %s",
        run["uuid"],
    )
    assert sorted((m, c) for m, c, _ in stored) == keys


def test_filesize_sweeps_https_over_the_sizes_asked(home: Path) -> None:
    done = tpcbench(home, "prelim", "filesize", "--sizes", "8MiB,24MiB", "--max", "2", "--json")
    assert done.returncode == 0, done.stderr
    points = json.loads(done.stdout)["points"]
    assert sorted((p["file_size"], p["concurrency"]) for p in points) == [
        (8 * MiB, 1),
        (8 * MiB, 2),
        (24 * MiB, 1),
        (24 * MiB, 2),
    ]
    assert {p["method"] for p in points} == {"https"}
    assert all(p["failed"] == 0 and p["throughput_gbps"] > 0 for p in points)
    table = tpcbench(home, "prelim", "filesize", "--sizes", "8MiB", "--max", "1").stdout
    assert "copies" in table and "8MiB" in table  # without --json: a table, sizes as columns


def test_the_memory_guard_refuses_what_would_not_fit(home: Path) -> None:
    before = LabRun.load(home / "lab" / "run.json").processes
    done = tpcbench(home, "prelim", "filesize", "--sizes", "1GiB,10GiB", "--max", "12",
                    "--memory-limit", "119GiB")  # fmt: skip
    assert done.returncode == 2
    message = done.stderr.strip().splitlines()
    assert (
        len(message) == 1 and "10GiB x (12 copies + the source) = 130GiB does not fit" in message[0]
    )
    assert "lower --max or the file size" in message[0]
    assert LabRun.load(home / "lab" / "run.json").processes == before  # nothing was started
    budget = MemoryBudget(4 << 30, {"--memory-limit": 4 << 30})
    check_fits(1 << 30, 3, budget)  # exactly 4 GiB fits
    with pytest.raises(UserError, match="does not fit in the 4GiB"):
        check_fits(1 << 30, 4, budget)


def test_a_baseline_between_two_lab_nodes_lands_in_the_webapp(
    home: Path, webapp: RealWebapp
) -> None:
    done = tpcbench(home, "baseline", "--src", "lab-1", "--dst", "lab-2", "--seconds", "2",
                    "--omit", "1", "--json", "--report-to", webapp.url,
                    token=webapp.token)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # as many streams as a measurement by default (11 transfers x 8), 1 s of slow start left out
    assert (result["src"], result["dst"], result["tool"], result["streams"]) == (
        "lab-1",
        "lab-2",
        "iperf3",
        88,
    )
    assert (result["duration_s"], result["omit_s"]) == (2, 1)
    assert result["throughput_gbps"] > 0.1 and result["error"] == ""
    assert isinstance(result["retransmits"], int) and result["retransmits"] >= 0
    stored = webapp.query(
        "SELECT s.name, d.name, b.throughput_gbps, b.streams, b.omit_s, b.retransmits "
        "FROM results_baseline b "
        "JOIN results_node s ON s.id = b.src_id JOIN results_node d ON d.id = b.dst_id "
        "WHERE b.uuid = %s",
        result["uuid"],
    )
    assert stored == [("lab-1", "lab-2", result["throughput_gbps"], 88, 1, result["retransmits"])]
    # without --json: one line saying how it was taken
    line = tpcbench(home, "baseline", "--src", "lab-2", "--dst", "lab-1", "--streams", "4",
                    "--seconds", "2", "--omit", "1")  # fmt: skip
    assert line.returncode == 0, line.stderr
    assert re.fullmatch(
        r"lab-2 -> lab-1: \d+\.\d{3} Gbit/s \(iperf3, 4 streams, 2 s after 1 s of slow start, "
        r"\d+ retransmits\)\n",
        line.stdout,
    ), line.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--src", "lab-1", "--dst", "lab-1"), "--src and --dst must be different nodes"),
        (
            ("--src", "lab-1", "--dst", "lab-9"),
            "no ready node lab-9; discovery found: lab-1, lab-2",
        ),
        (("--src", "lab-1", "--dst", "lab-2", "--seconds", "2", "--omit", "2"), "omit 2"),
        (("--src", "lab-1", "--dst", "lab-2", "--streams", "129"), "1-128 streams"),
    ],
)
def test_a_baseline_cli_refuses_what_cannot_run(home: Path, args: tuple, message: str) -> None:
    done = tpcbench(home, "baseline", *args)
    assert done.returncode == 2 and message in done.stderr, done.stderr

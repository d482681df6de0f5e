"""`make reproduce` end to end at the tiny scale: scripts/reproduce.sh starts the paper
profile's lab (3 nodes, 1 MiB files), a webapp with a fresh database, runs `tpcbench
reproduce --scale tiny` and the webapp's `paper_report`, and leaves nothing running.

Its own lab (prefix tpcrt, 10.99.80+), home, port and output directory."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
PREFIX, OFFSET = "tpcrt", 80
FIGURES = ("fig3-concurrency", "fig4-filesize", "fig5-pair-*", "fig7-latency", "fig8-streams")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
INTERVAL = re.compile(r"\[\s*[-+]?\d+(?:\.\d+)?\s*,\s*[-+]?\d+(?:\.\d+)?\s*\]")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_run() -> Iterator[tuple[subprocess.CompletedProcess[str], Path, Path, int]]:
    """The script's run, once: (its output, TPCBENCH_HOME, the output directory, the port)."""
    home = Path(tempfile.mkdtemp(prefix="tpcbench-reproduce-"))
    home.chmod(0o755)  # the lab's server account passes through it
    out = Path(tempfile.mkdtemp(prefix="tpcbench-reproduce-out-"))
    port = free_port()
    env = {
        **os.environ,
        "TPCBENCH_HOME": str(home),
        "TPCBENCH_LAB_PREFIX": PREFIX,
        "TPCBENCH_LAB_SUBNET_OFFSET": str(OFFSET),
        "REPRODUCE_SCALE": "tiny",
        "REPRODUCE_PORT": str(port),
        "REPRODUCE_OUT": str(out),
    }
    env.pop("DATABASE_URL", None)
    try:
        run = subprocess.run(
            ["scripts/reproduce.sh"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        yield run, home, out, port
    finally:  # whatever the script left, even after a timeout
        subprocess.run(
            [str(REPO / ".venv/bin/tpcbench"), "lab", "down"], env=env, capture_output=True
        )
        pid_file = home / "reproduce" / "webapp.pid"
        if pid_file.exists():
            subprocess.run(["kill", pid_file.read_text().strip()], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def test_the_script_runs_every_step_and_says_how_long_each_took(tiny_run) -> None:
    run, _, out, _ = tiny_run
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for step in range(1, 6):
        assert f"reproduce: [{step}/5]" in run.stdout
    assert run.stdout.count("reproduce:       took ") == 5
    assert re.search(r"reproduce: done in \dm\d\ds: " + re.escape(str(out)), run.stdout)
    # tpcbench reproduce's own summary: the steps, none failed
    assert "Figure 3: prelim concurrency" in run.stdout and "campaign 1/1" in run.stdout
    assert "0 failed point(s) or measurement(s)" in run.stderr


def test_the_three_findings_are_printed_paper_beside_ours_with_an_interval(tiny_run) -> None:
    run, _, out, _ = tiny_run
    lines = run.stdout.splitlines()
    for number in (1, 2, 3):
        finding = [line for line in lines if re.match(rf"\s*{number}\.\s", line)]
        assert finding, f"finding {number} is not printed:\n{run.stdout[-3000:]}"
        text = " ".join(finding)
        assert "paper" in text and "ours" in text and INTERVAL.search(text), text
    assert (out / "report.txt").read_text() in run.stdout  # the same words, kept


def test_the_json_holds_the_three_findings(tiny_run) -> None:
    _, _, out, _ = tiny_run
    report = json.loads((out / "findings.json").read_text())
    findings = report["findings"]
    assert {f["number"] for f in findings} == {1, 2, 3}  # 2 once per protocol
    for finding in findings:
        assert finding["title"] and finding["verdict"] in ("agrees", "disagrees")
        low, ours, high = finding["ci_low"], finding["ours"], finding["ci_high"]
        values = (finding["paper"], low, ours, high)
        assert all(isinstance(v, int | float) and math.isfinite(v) for v in values), finding
        assert low <= high and finding["cells"] >= 3


def test_the_ten_figure_files_are_real_png_and_svg(tiny_run) -> None:
    _, _, out, _ = tiny_run
    for stem in FIGURES:
        for suffix in ("png", "svg"):
            found = sorted(out.glob(f"{stem}.{suffix}"))
            assert len(found) == 1, f"{stem}.{suffix}: {sorted(p.name for p in out.iterdir())}"
            data = found[0].read_bytes()
            if suffix == "png":
                assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
            else:
                root = ET.fromstring(data)
                assert root.tag.endswith("svg") and len(list(root.iter())) > 20


def test_nothing_is_left_running(tiny_run) -> None:
    _, home, _, port = tiny_run
    assert not (home / "lab" / "run.json").exists()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{PREFIX}-" not in namespaces
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(home) not in processes  # no server, delay program or webapp of this home
    with socket.socket() as probe, pytest.raises(OSError):
        probe.settimeout(1)
        probe.connect(("127.0.0.1", port))

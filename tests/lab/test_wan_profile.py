"""--rtt SPEC, --link-capacity RATE and the RTT check's rule, as parsed (nothing is started)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.errors import UserError
from orchestrator.lab.wan_profile import (
    PRP_SITES,
    TcpSettings,
    derived_rtt_ms,
    great_circle_km,
    parse_duration_ms,
    parse_rate_gbit,
    rtt_matrix,
)
from orchestrator.latency.target import rtt_within_target

NODES = ["lab-1", "lab-2", "lab-3"]
REPO = Path(__file__).resolve().parents[2]


def test_uniform_gives_every_ordered_pair_the_same_rtt() -> None:
    matrix = rtt_matrix("uniform:30ms", NODES)
    assert len(matrix.rtt_ms) == 6 and set(matrix.rtt_ms.values()) == {30.0}
    assert rtt_matrix("uniform:0.1s", NODES).target("lab-3", "lab-1") == 100.0


def test_prp_profile_is_derived_from_site_geography() -> None:
    matrix = rtt_matrix("prp", ["lab-1", "lab-2", "lab-3", "lab-4", "lab-5"])
    assert matrix.sites == {
        "lab-1": "UCSD",
        "lab-2": "Stanford",
        "lab-3": "UNL",
        "lab-4": "UHawaii",
        "lab-5": "Amsterdam",
    }
    ucsd, amsterdam = PRP_SITES[0], PRP_SITES[4]
    # ~8,950 km of great circle, x1.5 of route, there and back at 200 km/ms
    assert 8800 < great_circle_km(ucsd, amsterdam) < 9100
    expected = round(2 * great_circle_km(ucsd, amsterdam) * 1.5 / 200, 1)
    assert matrix.target("lab-1", "lab-5") == expected == derived_rtt_ms(amsterdam, ucsd)
    assert matrix.target("lab-1", "lab-2") < matrix.target("lab-1", "lab-3")  # farther, longer
    assert all(matrix.target(a, b) == matrix.target(b, a) for a, b in matrix.rtt_ms)
    with pytest.raises(UserError, match="the prp profile has 9 sites"):
        rtt_matrix("prp", [f"lab-{i}" for i in range(1, 11)])


def test_yaml_matrix_one_direction_is_enough(tmp_path: Path) -> None:
    path = tmp_path / "wan.yaml"
    path.write_text(
        "rtt_ms:\n  lab-1: {lab-2: 10, lab-3: 30ms}\n  lab-2: {lab-3: 0.06s, lab-1: 10}\n"
        "  lab-4: {lab-1: 99}\n"  # a node the lab does not have: ignored
    )
    matrix = rtt_matrix(str(path), NODES)
    assert matrix.target("lab-3", "lab-2") == pytest.approx(60.0)
    assert matrix.target("lab-2", "lab-1") == matrix.target("lab-1", "lab-2") == 10.0
    assert matrix.targets_from("lab-3") == {"lab-1": 30.0, "lab-2": pytest.approx(60.0)}


def test_csv_matrix(tmp_path: Path) -> None:
    path = tmp_path / "wan.csv"
    path.write_text("src,dst,rtt_ms\nlab-1,lab-2,10\nlab-1,lab-3,30\n# comment\nlab-2,lab-3,60\n")
    assert rtt_matrix(str(path), NODES).target("lab-3", "lab-2") == 60.0


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        ("rtt_ms:\n  lab-1: {lab-2: 10}\n", ".yaml", "no RTT for lab-1 -> lab-3"),
        (
            "rtt_ms:\n  lab-1: {lab-2: 10, lab-3: 30}\n  lab-2: {lab-1: 12, lab-3: 5}\n",
            ".yaml",
            "lab-1 -> lab-2 is 10 ms but lab-2 -> lab-1 is 12 ms",
        ),
        ("rtt_ms: [1, 2]\n", ".yaml", "want `rtt_ms:"),
        ("rtt_ms:\n  lab-1: {lab-2: fast}\n", ".yaml", "'fast' is not a duration"),
        ("rtt_ms:\n  lab-1: {lab-2: 5000}\n", ".yaml", "out of range"),
        ("rtt_ms:\n  node-a: {lab-2: 5}\n", ".yaml", "is not a pair of lab nodes"),
        ("lab-1,lab-2\n", ".csv", "every CSV row must be src,dst,rtt_ms"),
        ("rtt_ms: {lab-1: [\n", ".yaml", "is not valid YAML"),
    ],
)
def test_bad_matrices_say_what_is_wrong(
    tmp_path: Path, content: str, suffix: str, message: str
) -> None:
    path = tmp_path / f"wan{suffix}"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        rtt_matrix(str(path), NODES)


def test_an_unknown_spec_names_the_choices() -> None:
    with pytest.raises(UserError, match=r"neither uniform:<RTT>, a profile \(prp\)"):
        rtt_matrix("nowhere.yaml", NODES)


@pytest.mark.parametrize(
    ("text", "ms"), [("30ms", 30.0), ("0.5s", 500.0), ("250us", 0.25), ("12", 12.0), (7, 7.0)]
)
def test_durations(text: str | int, ms: float) -> None:
    assert math.isclose(parse_duration_ms(text), ms)


@pytest.mark.parametrize(
    ("text", "gbit"),
    [("10gbit", 10.0), ("2.5G", 2.5), ("500mbit", 0.5), ("1Gbit/s", 1.0), ("100", 100.0)],
)
def test_rates(text: str, gbit: float) -> None:
    assert math.isclose(parse_rate_gbit(text), gbit)


@pytest.mark.parametrize("text", ["fast", "0gbit", "-1G", "10 GB"])
def test_bad_rates(text: str) -> None:
    with pytest.raises(UserError, match="is not a rate"):
        parse_rate_gbit(text)


def test_tcp_settings_are_checked_against_this_kernel() -> None:
    assert TcpSettings("cubic", 4 << 20).sysctls()["net.ipv4.tcp_wmem"] == "4096 16384 4194304"
    with pytest.raises(UserError, match="congestion control 'vegas2' is not available"):
        TcpSettings("vegas2").validate()
    TcpSettings("reno").validate()  # always allowed
    proc = Path("/proc/sys/net/ipv4")
    available = set((proc / "tcp_available_congestion_control").read_text().split())
    allowed = set((proc / "tcp_allowed_congestion_control").read_text().split())
    for name in sorted(available - allowed):  # e.g. cubic beside a default bbr
        with pytest.raises(UserError, match="tcp_allowed_congestion_control="):
            TcpSettings(name).validate()
    with pytest.raises(UserError, match="--tcp-buffer"):
        TcpSettings(buffer_max=1024).validate()


@pytest.mark.parametrize(
    ("measured", "target", "within"),
    [
        (10.9, 10.0, True),  # 1 ms is the floor
        (11.1, 10.0, False),
        (104.9, 100.0, True),  # 5% above 20 ms
        (94.0, 100.0, False),
        (None, 30.0, False),  # no RTT at all: off
        (3.0, None, None),  # no target: not checked
    ],
)
def test_rtt_check_rule(measured: float | None, target: float | None, within: bool | None) -> None:
    assert rtt_within_target(measured, target) is within


def test_lab_rtt_command_prints_the_matrix() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "orchestrator", "lab", "rtt", "prp", "--nodes", "4"],
        capture_output=True, text=True, check=True, cwd=REPO,
    ).stdout  # fmt: skip
    assert "lab-4 (UHawaii)" in shown
    row = next(line for line in shown.splitlines() if line.startswith("lab-3 (UNL)"))
    matrix = rtt_matrix("prp", ["lab-1", "lab-2", "lab-3", "lab-4"])
    assert row.split()[-1] == f"{matrix.target('lab-3', 'lab-4'):.1f}" == "91.2"

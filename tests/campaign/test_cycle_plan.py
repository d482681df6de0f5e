"""`tpcbench campaign plan` says the next scheduled campaign's estimate and how it fits its
cycle (text and --json), without moving the rotation; a lab inventory of 100 nodes written
here (nothing is measured, no lab runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.lab.inventory import LabInventory


def inventory(tmp_path: Path, n: int) -> Path:
    nodes = [Endpoint(f"node-{i:03d}", f"10.99.46.{i + 1}", {"https": 1094}) for i in range(n)]
    creds = ClientCredentials(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "ca")
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(LabInventory(nodes, creds, 1024).to_json()))
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("TPCBENCH_HOME", str(tmp_path / "home"))
    for name in ("TPCBENCH_SCHEDULE", "TPCBENCH_CYCLE_FIT", "TPCBENCH_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def test_plan_json_says_the_rotation_of_the_issues_100_nodes(tmp_path, home, capsys) -> None:
    # the issue's example: 100 nodes, 4 checks of 60 s, 50 pairs at a time: 13.2 h > 12 h
    path = inventory(tmp_path, 100)
    flags = ["--inventory", str(path), "--max-parallel-pairs", "50", "--json"]
    assert main(["campaign", "plan", *flags]) == 0
    plan = json.loads(capsys.readouterr().out)
    fit = plan["cycle_fit"]
    assert len(plan["measurements"]) == 39600
    assert fit["schedule"] == "0 0,12 * * *" and fit["cycle_seconds"] == 43200
    assert fit["estimate"]["bound"] == 4 * 198 * 60.0  # the busiest node: 13.2 h
    assert (fit["mode"], fit["k"], fit["k_min"], fit["part"]) == ("rotate", 2, 2, 1)
    assert fit["measurements_this_cycle"] == 19800
    assert not (home / "rotation.json").exists()  # a plan never moves the rotation


def test_plan_text_says_shorten_and_what_it_left_out(tmp_path, home, capsys) -> None:
    path = inventory(tmp_path, 100)
    flags = ["--inventory", str(path), "--max-parallel-pairs", "50", "--cycle-fit", "shorten"]
    assert main(["campaign", "plan", *flags]) == 0
    out = capsys.readouterr().out
    assert "scheduled (0 0,12 * * *): estimate: 39600 measurements, 13.2 h" in out
    assert "shortened (cycle_fit = shorten), left out streams 1: 19800 measurements" in out


def test_plan_with_a_bad_cycle_fit_is_one_line(tmp_path, home, capsys) -> None:
    path = inventory(tmp_path, 3)
    assert main(["campaign", "plan", "--inventory", str(path), "--cycle-fit", "drop"]) != 0
    assert "cycle_fit: drop is not one of rotate, shorten, off" in capsys.readouterr().err


def test_plan_full_duplex_flag_lowers_the_bound_the_estimate_is_held_against(
    tmp_path, home, capsys
) -> None:
    path = inventory(tmp_path, 100)
    # 100 pairs at a time: the busiest node, not the parallelism, bounds the campaign
    flags = ["--inventory", str(path), "--max-parallel-pairs", "100", "--json"]
    assert main(["campaign", "plan", *flags]) == 0
    half = json.loads(capsys.readouterr().out)["cycle_fit"]
    assert main(["campaign", "plan", *flags, "--full-duplex"]) == 0
    full = json.loads(capsys.readouterr().out)["cycle_fit"]
    # a node sending in one measurement while receiving in another: its 2(N-1) pairs' work
    # is bounded by the larger of its sends and receives, half of the sum
    assert full["estimate"]["bound"] == half["estimate"]["bound"] / 2
    assert full["k"] <= half["k"]


def test_the_orchestrators_cycle_fit_and_full_duplex_flags_win_over_the_environment(
    monkeypatch,
) -> None:
    from orchestrator.cli import build_parser
    from orchestrator.cli.campaign_options import settings_from_args

    monkeypatch.setenv("TPCBENCH_CYCLE_FIT", "off")
    monkeypatch.delenv("TPCBENCH_FULL_DUPLEX", raising=False)
    args = build_parser().parse_args(["orchestrator", "--cycle-fit", "shorten", "--full-duplex"])
    settings = settings_from_args(args)
    assert (settings.cycle_fit, settings.full_duplex) == ("shorten", True)
    assert settings.sources["cycle_fit"] == "flag"
    args = build_parser().parse_args(["orchestrator"])
    settings = settings_from_args(args)
    assert (settings.cycle_fit, settings.full_duplex) == ("off", False)

"""`tpcbench measure`: JSON and table output against real servers, one-line input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.lab.inventory import LabInventory, save_inventory
from tests.support.two_nodes import SMALL, TwoNodes


@pytest.fixture
def inventory(two_nodes: TwoNodes, tmp_path: Path) -> Path:
    path = tmp_path / "inventory.json"
    nodes = [n.endpoint for n in two_nodes.nodes]
    save_inventory(LabInventory(nodes, two_nodes.creds, SMALL, mode="loopback"), path)
    return path


@pytest.mark.lab
def test_json_prints_the_full_record(inventory: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["measure", "--src", "node-a", "--dst", "node-b", "--protocol", "https"]
    argv += ["--streams", "2", "--transfers", "2", "--json", "--inventory", str(inventory)]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["src"], record["dst"], record["protocol"], record["streams"]) == (
        "node-a",
        "node-b",
        "https",
        2,
    )
    assert record["file_size"] == SMALL  # the lab's file size when --file-size is absent
    assert [t["outcome"] for t in record["transfers"]] == ["success", "success"]
    assert record["throughput_gbps"] > 0


@pytest.mark.lab
def test_table_and_exit_status_report_failures(
    inventory: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["measure", "--src", "node-a", "--dst", "node-b", "--protocol", "gridftp"]
    argv += ["--transfers", "1", "--file-size", "3MiB", "--inventory", str(inventory)]
    assert main(argv) == 1  # no 3 MiB source exists: every transfer fails
    out = capsys.readouterr().out
    assert "not-found" in out and "0 ok / 1 failed" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--streams", "0"], "--streams must be between 1 and 100"),
        (["--file-size", "lots"], "--file-size: 'lots' is not a size"),
        (["--timeout", "-1"], "--timeout must be a positive number"),
        (["--cert", "/nonexistent"], "need all of --cert, --key and --certdir"),
    ],
)
def test_bad_input_is_one_line(
    inventory: Path, capsys: pytest.CaptureFixture, extra: list[str], message: str
) -> None:
    argv = ["measure", "--src", "node-a", "--dst", "node-b", "--protocol", "root"]
    assert main([*argv, "--inventory", str(inventory), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_unknown_node_names_the_known_ones(inventory: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["measure", "--src", "node-a", "--dst", "node-z", "--protocol", "https"]
    assert main([*argv, "--inventory", str(inventory)]) == 2
    assert "node-z" in capsys.readouterr().err


def test_no_lab_says_how_to_start_one(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["measure", "--src", "a", "--dst", "b", "--protocol", "https"]
    assert main([*argv, "--inventory", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert "tpcbench lab up" in err and "--cert/--key/--certdir" in err

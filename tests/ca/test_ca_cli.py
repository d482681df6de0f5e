"""`tpcbench ca ...` as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def tpcbench(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        capture_output=True,
        text=True,
        env={"TPCBENCH_HOME": str(home), "PATH": "/usr/bin:/bin"},
        check=False,
    )


def test_cli_flow(tmp_path: Path) -> None:
    missing = tpcbench("ca", "issue-host", "--name", "n1", home=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"tpcbench: error: no CA in {tmp_path / 'ca'}; create one with: "
        f"tpcbench ca init --dir {tmp_path / 'ca'}"
    ]
    created = tpcbench("ca", "init", home=tmp_path)
    assert created.returncode == 0 and created.stdout.startswith("created CA")
    kept = tpcbench("ca", "init", home=tmp_path)
    assert kept.returncode == 0 and kept.stdout.startswith("kept existing CA")
    host = tpcbench("ca", "issue-host", "--name", "n1", "--ip", "10.0.0.1", home=tmp_path)
    assert host.returncode == 0 and "host certificate issued" in host.stdout
    assert (tmp_path / "ca" / "hosts" / "n1" / "hostcert.pem").exists()
    client = tpcbench(
        "ca", "issue-client", "--dir", str(tmp_path / "ca"), "--name", "o", home=tmp_path
    )
    assert '"/DC=org/DC=tpc-bench/OU=People/CN=o"' in client.stdout
    show = tpcbench("ca", "show", home=tmp_path)
    assert "subject:       /DC=org/DC=tpc-bench/CN=tpc-bench CA" in show.stdout
    bad = tpcbench("ca", "issue-host", "--name", "n2", "--ip", "nope", home=tmp_path)
    assert (
        bad.returncode == 2 and bad.stderr.strip() == "tpcbench: error: invalid IP address 'nope'"
    )


def test_help_lists_the_actions(tmp_path: Path) -> None:
    result = tpcbench("ca", "--help", home=tmp_path)
    assert result.returncode == 0
    for action in ("init", "issue-host", "issue-client", "show"):
        assert action in result.stdout

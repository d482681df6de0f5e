"""The orchestrator as its users run it, for end-to-end tests: `tpcbench campaign run` and
`tpcbench orchestrator` as child processes with a state directory of their own, reporting to
a real webapp (tests/support/real_webapp.py) from a real lab (`started_lab`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from orchestrator.lab import LabInventory, LabNetwork
from orchestrator.lab.temporary import temporary_lab
from orchestrator.report.spool import Spool
from tests.support.polling import poll_until
from tests.support.real_webapp import REPO, RealWebapp

FILE_SIZE = 1 << 20
NETWORK = LabNetwork(prefix="tpcbo", subnet_offset=220, base_port=24000)


def started_lab(nodes: int) -> AbstractContextManager[tuple[Path, LabInventory]]:
    """A lab of `nodes` nodes on NETWORK, in a home of its own, removed afterwards."""
    return temporary_lab(f"tpcbench-orchtest{nodes}-", nodes, FILE_SIZE, network=NETWORK)


def wait_until(condition: Callable[[], bool], timeout: float = 300.0) -> None:
    """Liveness wait for a condition (never an assertion about how long it took), checked
    often: the tests act on a campaign in the middle of it."""
    poll_until(condition, bool, "a campaign's condition", timeout, interval=0.1)


class Orchestrator:
    """`tpcbench` subcommands run as child processes with their own TPCBENCH_HOME."""

    def __init__(self, state: Path, lab_home: Path, webapp: RealWebapp) -> None:
        self.state = state
        self.inventory = lab_home / "lab" / "inventory.json"
        self.webapp = webapp
        self.env = {
            **os.environ,
            "TPCBENCH_HOME": str(state),
            "TPCBENCH_API_TOKEN": webapp.token,
            "PYTHONPATH": str(REPO),
        }

    def spawn(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "orchestrator", *argv],
            env=self.env,
            cwd=self.state,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def campaign(self, *extra: str) -> subprocess.Popen[str]:
        return self.spawn(
            "campaign",
            "run",
            "--inventory",
            str(self.inventory),
            "--report-to",
            self.webapp.url,
            "--transfers",
            "2",
            "--transfer-timeout",
            "60",
            *extra,
        )

    def service(self, *extra: str) -> subprocess.Popen[str]:
        """`tpcbench orchestrator` on this lab and webapp; its cron never fires in a test."""
        return self.spawn(
            "orchestrator",
            "--inventory",
            str(self.inventory),
            "--report-to",
            self.webapp.url,
            "--schedule",
            "0 0 1 1 *",
            "--metrics-port",
            "0",
            *extra,
        )

    def journals(self) -> list[dict]:
        folder = self.state / "campaigns"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]

    def journal(self) -> dict:
        (only,) = self.journals()
        return only

    def finished_count(self) -> int:
        journals = self.journals()
        return len(journals[0]["finished_measurements"]) if journals else 0

    def spool(self) -> Spool:
        return Spool(self.state / "spool")


def assert_each_spec_once(rows, expected: int) -> None:
    specs = Counter((r[1], r[2], r[3], r[4]) for r in rows)
    assert len(rows) == expected
    assert max(specs.values()) == 1, "a measurement was stored twice"

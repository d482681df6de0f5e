"""The local record of each campaign ($TPCBENCH_HOME/campaigns/<uuid>.json): its state and
the uuid of every finished measurement, written atomically. A campaign still "running" in its
journal when the orchestrator starts again was interrupted, and is marked so
(`recover_interrupted`).
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.paths import tpcbench_home
from orchestrator.report.reporter import Reporter
from orchestrator.report.spool import write_json_atomically
from orchestrator.transfers.record import iso

log = logging.getLogger(__name__)


def campaigns_dir(home: Path | None = None) -> Path:
    return (home or tpcbench_home()) / "campaigns"


class CampaignJournal:
    """The local record of one campaign: its state and every finished measurement's uuid."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self._lock = threading.Lock()

    @classmethod
    def create(cls, directory: Path, campaign_uuid: str, **fields: Any) -> CampaignJournal:
        data = {"uuid": campaign_uuid, "state": "running", "finished_measurements": [], **fields}
        journal = cls(directory / f"{campaign_uuid}.json", data)
        journal.save()
        return journal

    @classmethod
    def load(cls, path: Path) -> CampaignJournal:
        return cls(path, json.loads(path.read_text(encoding="utf-8")))

    def save(self) -> None:
        write_json_atomically(self.path, self.data)

    def add_measurement(self, measurement_uuid: str) -> None:
        with self._lock:
            self.data["finished_measurements"].append(measurement_uuid)
            self.save()

    def set_state(self, state: str, **fields: Any) -> None:
        with self._lock:
            self.data.update(state=state, **fields)
            self.save()


def recover_interrupted(reporter: Reporter, home: Path | None = None) -> list[str]:
    """Mark every campaign left "running" by a killed orchestrator as interrupted."""
    directory = campaigns_dir(home)
    recovered = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        try:
            journal = CampaignJournal.load(path)
        except (OSError, ValueError):
            log.warning("unreadable campaign journal %s", path)
            continue
        if journal.data.get("state") != "running":
            continue
        finished = journal.data.get("finished") or iso(datetime.now(UTC))
        journal.set_state("interrupted", finished=finished)
        reporter.report_campaign(journal.data["uuid"], campaign_payload(journal.data))
        recovered.append(journal.data["uuid"])
    return recovered


# A campaign's measurements: planned (in this cycle), done (every transfer succeeded),
# failed, missed (not started: the deadline, the next cycle's start, passed before they
# began) and late (ended after the deadline). The journal keeps them as top-level keys.
COUNTERS = ("planned", "done", "failed", "missed", "late")


def new_counters() -> dict[str, int]:
    return dict.fromkeys(COUNTERS, 0)


def campaign_payload(data: dict[str, Any]) -> dict[str, Any]:
    """What the webapp keeps of a campaign: its state and times, the RTT check before it
    (an emulated WAN's pairs against their targets), once made, its counters and how it fit
    its cycle (`cycle_fit`, rotation.py), once known."""
    keys = (
        "uuid", "state", "trigger", "schedule", "started", "finished", "rtt_checks",
        *COUNTERS, "cycle_fit",
    )  # fmt: skip
    return {k: data[k] for k in keys if data.get(k) is not None}

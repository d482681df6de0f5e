"""What a campaign keeps against its cycle (rotation.py fits the plan to it): the counters
planned, done, failed, missed and late, when each measurement began, and the durations the
next campaigns' estimates learn from (estimate.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.campaign.estimate import DurationHistory
from orchestrator.campaign.journal import CampaignJournal, new_counters
from orchestrator.campaign.rotation import fit_cycle
from orchestrator.campaign.settings import CampaignSettings
from orchestrator.measurement.spec import MeasurementSpec


class CycleBook:
    """One campaign's book; `clock` is compared with `settings.deadline` (the next cycle's
    start: a measurement not begun by then is missed, one ending after it late)."""

    def __init__(
        self, settings: CampaignSettings, home: Path | None, clock: Callable[[], datetime]
    ) -> None:
        self.settings = settings
        self.home = home
        self.clock = clock
        self.history: DurationHistory | None = None
        self.counters = new_counters()
        self.missed: set[MeasurementSpec] = set()
        self._began: dict[MeasurementSpec, datetime] = {}

    def fit(self, specs: list[MeasurementSpec], journal: CampaignJournal) -> list[MeasurementSpec]:
        """What this cycle measures (all of it, a rotation's part, or shortened), said in
        the log and the journal with the estimate (blocking: it reads and writes files)."""
        settings = self.settings
        self.history = DurationHistory.load(self.home)
        fit = fit_cycle(
            specs,
            max_parallel=settings.max_parallel_pairs,
            history=self.history,
            cycle=settings.cycle,
            slip=settings.slip,
            mode=settings.cycle_fit,
            home=self.home,
            full_duplex=settings.full_duplex,
        )
        self.counters["planned"] = len(fit.specs)
        journal.set_state("running", cycle_fit=fit.to_json(), **self.counters)
        return fit.specs

    def past_deadline(self, spec: MeasurementSpec) -> bool:
        """Whether `spec` may no longer start (then it is missed)."""
        deadline = self.settings.deadline
        if deadline is not None and self.clock() >= deadline:
            self.missed.add(spec)
            return True
        return False

    def began(self, spec: MeasurementSpec) -> None:
        self._began[spec] = self.clock()

    def ended(self, spec: MeasurementSpec, measured_ok: bool | None) -> bool:
        """`spec` ended (`measured_ok` None: crashed or skipped, no duration learnt); False
        when it was missed (counted here, not a measurement to report)."""
        if spec in self.missed:
            self.counters["missed"] += 1
            return False
        began = self._began.pop(spec, None)
        took = (self.clock() - began).total_seconds() if began is not None else -1.0
        if took >= 0 and measured_ok is not None and self.history:
            self.history.record(spec, took)
        return True

    def count(self, measured: dict[str, Any]) -> None:
        """A reported measurement: done or failed, and late after the deadline."""
        ok = measured["failed"] == 0 and measured["succeeded"] > 0
        self.counters["done" if ok else "failed"] += 1
        deadline = self.settings.deadline
        if deadline is not None and self.clock() > deadline:
            self.counters["late"] += 1

    def close(self) -> dict[str, int]:
        """Saves the durations learnt; the counters for the journal (none if nothing was
        planned: a campaign that failed before its plan)."""
        if self.history is not None and self.history.durations:
            self.history.save()  # what the next campaigns' estimates learn from
        return self.counters if self.counters["planned"] else {}

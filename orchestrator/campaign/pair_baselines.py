"""`--baseline`: each ordered pair's link measured (iperf3) before its first measurement, with
as many streams as the pair's busiest measurement; reported as a result of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from orchestrator.campaign.settings import CampaignSettings
from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.prelim.baseline import (
    Baseline,
    check_baseline_options,
    check_baseline_possible,
    link_streams,
)
from orchestrator.report.reporter import Reporter


class PairBaselines:
    """The baselines of one campaign (`measure` blocks: it runs in a thread)."""

    def __init__(
        self,
        settings: CampaignSettings,
        measure: Callable[..., Baseline],
        reporter: Reporter,
        campaign: str,
    ) -> None:
        self.settings = settings
        self.measure = measure
        self.reporter = reporter
        self.campaign = campaign
        self.taken: set[tuple[str, str]] = set()  # ordered pairs whose link was measured

    @property
    def streams(self) -> int:
        """As many streams as the pair's busiest measurement: K transfers x the most streams."""
        return link_streams(self.settings.transfers, max(self.settings.streams))

    def problem(self, endpoints: Iterable[Endpoint]) -> str:
        """Why the baselines asked for cannot be taken, or "" (also when none are asked)."""
        if not self.settings.baseline:
            return ""
        settings = self.settings
        try:
            check_baseline_options(self.streams, settings.baseline_seconds, settings.baseline_omit)
            for endpoint in endpoints:
                check_baseline_possible(endpoint, endpoint)
        except UserError as exc:
            return str(exc)
        return ""

    async def take(self, src: Endpoint, dst: Endpoint) -> None:
        """The pair's baseline, once, if asked; a failed one comes back as data (its error)."""
        pair = (src.name, dst.name)
        if not self.settings.baseline or pair in self.taken:
            return
        self.taken.add(pair)
        measured = await asyncio.to_thread(
            self.measure,
            src,
            dst,
            campaign=self.campaign,
            streams=self.streams,
            seconds=self.settings.baseline_seconds,
            omit=self.settings.baseline_omit,
        )
        await asyncio.to_thread(self.reporter.report_result, "baseline", measured.to_json())

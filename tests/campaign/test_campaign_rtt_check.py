"""Before a campaign on an emulated WAN, every pair's RTT is checked against its target: a pair
that is off is measured anyway, marked on its measurements and named in the summary."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from orchestrator.campaign.run import Campaign
from orchestrator.campaign.settings import CampaignSettings
from orchestrator.cli.campaign_command import rtt_check_summary, summary_table
from orchestrator.endpoints import Endpoint
from tests.support.campaign_doubles import (
    CollectingReporter,
    FixedDiscovery,
    instant_measurement,
)

TARGETS = {("a", "b"): 10.0, ("a", "c"): 30.0, ("b", "c"): 60.0}
ONE_EACH = CampaignSettings(protocols=("https",), streams=(1,), transfers=1, file_size=1024)


def target(src: str, dst: str) -> float:
    return TARGETS.get((src, dst)) or TARGETS[(dst, src)]


def nodes(link_gbps: float | None = 2.0) -> list[Endpoint]:
    names = "abc"
    return [
        Endpoint(
            name=n,
            address="127.0.0.1",
            link_gbps=link_gbps,
            rtt_targets_ms={m: target(n, m) for m in names if m != n},
        )
        for n in names
    ]


class FakeRtt:
    """RTT answers: the target, except b -> c (far off, every time) and a -> b (off once)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def __call__(self, src: Endpoint, dst: Endpoint, port: int) -> float | None:
        self.asked.append((src.name, dst.name))
        if (src.name, dst.name) == ("b", "c"):
            return 70.0
        if (src.name, dst.name) == ("a", "b") and self.asked.count(("a", "b")) == 1:
            return 13.0  # a moment's contention: measured again
        return target(src.name, dst.name) + 0.4


def test_pairs_are_checked_before_measuring_and_an_off_pair_is_marked(tmp_path: Path) -> None:
    reporter, rtt = CollectingReporter(), FakeRtt()
    result = Campaign(
        ONE_EACH, discovery=FixedDiscovery(nodes()), reporter=reporter,  # type: ignore[arg-type]
        measure=instant_measurement, rtt=rtt, home=tmp_path,
    ).run()  # fmt: skip
    assert result.state == "finished" and len(reporter.measurements) == 6
    assert len(rtt.asked) == 6 + 2  # every pair once, the two off ones again
    assert [(c.src, c.dst) for c in result.rtt_off] == [("b", "c")]
    by_pair = {(m["src"], m["dst"]): m for m in reporter.measurements}
    off = by_pair[("b", "c")]
    assert (off["rtt_ms"], off["rtt_target_ms"], off["rtt_within_target"]) == (70.0, 60.0, False)
    fine = by_pair[("a", "b")]
    assert (fine["rtt_ms"], fine["rtt_within_target"]) == (10.4, True)
    assert (fine["src_link_gbps"], fine["dst_link_gbps"]) == (2.0, 2.0)
    summary = rtt_check_summary(result)
    assert "5/6 pairs within 1 ms or 5%" in summary
    assert "b -> c: target 60 ms, measured 70.00 ms" in summary
    console = Console(width=200, record=True)
    console.print(summary_table(result, 1024, 1))
    row = next(
        line for line in console.export_text().splitlines() if "│ b " in line and "│ c " in line
    )
    assert "70.000 OFF" in row and "│ 60 " in row


def test_without_targets_nothing_is_checked_or_marked(tmp_path: Path) -> None:
    reporter, rtt = CollectingReporter(), FakeRtt()
    plain = [Endpoint(name=n, address="127.0.0.1") for n in "ab"]
    result = Campaign(
        ONE_EACH, discovery=FixedDiscovery(plain), reporter=reporter,  # type: ignore[arg-type]
        measure=instant_measurement, rtt=rtt, home=tmp_path,
    ).run()  # fmt: skip
    assert result.rtt_checks == [] and len(rtt.asked) == 2  # the usual one RTT per pair
    assert not any("rtt_target_ms" in m for m in reporter.measurements)
    # no link capacity known: said as null, so the webapp forgets one it kept from before
    assert all(m["src_link_gbps"] is m["dst_link_gbps"] is None for m in reporter.measurements)
    console = Console(width=200, record=True)
    console.print(summary_table(result, 1024, 1))
    shown = console.export_text()
    assert "target" not in shown and "RTT ms" in shown

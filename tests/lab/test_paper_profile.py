"""The paper profile and the TCP buffer rule, as computed (nothing is started): the rule's
numbers, the file size's two conditions, and options given overriding the profile's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.cli import build_parser
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.paper_profile import (
    MIN_ROUNDS_PAST_SLOW_START,
    PAPER,
    bdp_bytes,
    choose_lab,
    choose_tcp_buffer,
    file_size_rule,
    tcp_buffer_rule,
)
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import LabNetwork
from orchestrator.lab.wan_profile import rtt_matrix

MiB = 1 << 20
PRP_4_LARGEST = 91.2  # lab-3 (UNL) <-> lab-4 (UHawaii)
PRP_3_LARGEST = 33.3  # lab-2 (Stanford) <-> lab-3 (UNL)


def largest_rtt(spec: str, nodes: int) -> float:
    return max(rtt_matrix(spec, [f"lab-{i}" for i in range(1, nodes + 1)]).rtt_ms.values())


def test_the_rule_is_twice_the_bdp_rounded_up_to_a_power_of_two() -> None:
    choice = tcp_buffer_rule(2.0, PRP_4_LARGEST)
    assert bdp_bytes(2.0, PRP_4_LARGEST) == pytest.approx(22.8e6)
    assert choice.buffer_max == 64 * MiB  # 2 x 22.8 MB = 45.6 MB -> 64 MiB
    assert choice.source == "auto"
    assert choice.reason() == (
        "64MiB (auto: 2 x BDP = 2 x 2 Gbit/s x 91.2 ms = 45.6 MB, rounded up to a power of two)"
    )
    assert tcp_buffer_rule(10.0, PRP_4_LARGEST).buffer_max == 256 * MiB  # 228 MB


def test_a_buffer_exactly_a_power_of_two_is_not_doubled() -> None:
    # 2 x BDP = 2**26 bytes exactly: 2.68435456 Gbit/s x 100 ms
    assert tcp_buffer_rule(2.68435456, 100.0).buffer_max == 64 * MiB


def test_the_rule_has_a_floor_and_a_ceiling_and_says_which() -> None:
    low = tcp_buffer_rule(2.0, PRP_3_LARGEST)  # 2 x 8.3 MB -> 16 MiB, below the default
    assert low.buffer_max == 32 * MiB
    assert "(16MiB), raised to the 32MiB floor" in low.reason()
    high = tcp_buffer_rule(100.0, PRP_4_LARGEST)  # the paper's links: 2.28 GB -> 4 GiB
    assert high.buffer_max == 1 << 30
    assert "(4GiB), capped at 1GiB" in high.reason()


def test_auto_is_the_default_only_when_link_and_rtt_are_both_known() -> None:
    assert choose_tcp_buffer(None, 2.0, PRP_4_LARGEST).source == "auto"
    assert choose_tcp_buffer(None, 2.0, None).buffer_max == 32 * MiB
    assert choose_tcp_buffer(None, None, 30.0).source == "default"
    given_size = choose_tcp_buffer(512 << 10, 2.0, PRP_4_LARGEST)
    assert (given_size.buffer_max, given_size.source) == (512 << 10, "given")
    assert given_size.reason() == "512KiB (given with --tcp-buffer)"
    with pytest.raises(UserError, match="give --link-capacity and --rtt too"):
        choose_tcp_buffer("auto", None, 30.0)


def test_paper_file_size_scales_the_paper_and_lasts_many_round_trips() -> None:
    rule = file_size_rule(2.0, PRP_4_LARGEST, 11)
    assert rule.file_size == 64 * MiB
    assert rule.scaled == pytest.approx((1 << 30) / 50)  # 1 GiB x 2 / 100 Gbit/s: 21.5 MB
    assert rule.paper_ratio == pytest.approx(0.942, abs=1e-3)  # 1 GiB / (100 Gbit/s x 91.2 ms)
    assert rule.ratio == pytest.approx(2.943, abs=1e-3)
    assert rule.share_window == pytest.approx(22.8e6 / 11)  # one of 11 transfers' window
    assert rule.slow_start_rounds == pytest.approx(7.2, abs=0.05)
    assert rule.rounds_past_slow_start() == pytest.approx(30.4, abs=0.05)
    assert rule.rounds_past_slow_start(rule.scaled) < MIN_ROUNDS_PAST_SLOW_START  # why not 21.5 MB
    text = "\n".join(rule.explain())
    assert "0.94" in text and "2.94" in text and "30 more" in text and "at least 20" in text


@given(
    link=st.floats(min_value=0.1, max_value=400.0),
    rtt=st.floats(min_value=0.5, max_value=500.0),
    transfers=st.integers(min_value=1, max_value=64),
)
def test_the_file_size_meets_both_conditions_and_is_the_smallest_power_that_does(
    link: float, rtt: float, transfers: int
) -> None:
    rule = file_size_rule(link, rtt, transfers)
    size = rule.file_size
    assert size & (size - 1) == 0  # a power of two
    assert size >= rule.scaled * (1 - 1e-9)  # at least the paper's ratio
    assert rule.rounds_past_slow_start() >= MIN_ROUNDS_PAST_SLOW_START - 1e-6
    assert size // 2 < max(rule.scaled, rule.for_rounds, MiB) * (1 + 1e-9)  # no larger


def test_the_paper_profile_without_options() -> None:
    choice = choose_lab(
        "paper",
        nodes=None,
        rtt=None,
        link_gbit=None,
        tcp_buffer=None,
        file_size=None,
        largest_rtt_ms=largest_rtt,
    )
    assert (choice.nodes, choice.rtt, choice.link_gbit) == (4, "prp", 2.0)
    assert (choice.buffer.buffer_max, choice.buffer.source) == (64 * MiB, "auto")
    assert choice.file_size == 64 * MiB and choice.given == ()
    record = choice.record()
    assert record["name"] == "paper" and record["given"] == []
    assert record["file_size_rule"]["paper_ratio"] == pytest.approx(0.942)
    assert "45.6 MB" in record["tcp_buffer"]["reason"]
    assert any("file size 64MiB" in line for line in choice.explain())


def test_options_given_override_the_profile_and_the_rules_follow_them() -> None:
    fewer = choose_lab(
        "paper",
        nodes=3,
        rtt=None,
        link_gbit=None,
        tcp_buffer=None,
        file_size=None,
        largest_rtt_ms=largest_rtt,
    )
    # 3 prp nodes: the largest RTT is 33.3 ms, so both rules give less
    assert fewer.buffer.rtt_ms == PRP_3_LARGEST and fewer.buffer.buffer_max == 32 * MiB
    assert fewer.file_size == 32 * MiB and fewer.given == ("nodes",)
    mine = choose_lab(
        "paper",
        nodes=None,
        rtt="uniform:30ms",
        link_gbit=1.0,
        tcp_buffer=8 * MiB,
        file_size=MiB,
        largest_rtt_ms=largest_rtt,
    )
    assert (mine.nodes, mine.rtt, mine.link_gbit, mine.file_size) == (4, "uniform:30ms", 1.0, MiB)
    assert mine.buffer.source == "given" and mine.buffer.buffer_max == 8 * MiB
    assert mine.given == ("rtt", "link-capacity", "tcp-buffer", "file-size")
    assert mine.record()["file_size_rule"]["link_gbps"] == 1.0  # what the file would have been


def test_without_a_profile_the_defaults_stay_and_auto_needs_a_wan() -> None:
    plain = choose_lab(
        None,
        nodes=None,
        rtt=None,
        link_gbit=None,
        tcp_buffer=None,
        file_size=None,
        largest_rtt_ms=largest_rtt,
    )
    assert (plain.nodes, plain.file_size, plain.buffer.source) == (3, 1 << 30, "default")
    assert plain.record() == {} and plain.given == ()
    wan = choose_lab(
        None,
        nodes=4,
        rtt="prp",
        link_gbit=2.0,
        tcp_buffer=None,
        file_size=None,
        largest_rtt_ms=largest_rtt,
    )
    assert wan.buffer.source == "auto" and wan.buffer.buffer_max == 64 * MiB
    assert wan.file_size == 1 << 30  # the file is the profile's business only
    with pytest.raises(UserError, match="RTTs above 0 ms"):
        choose_lab(
            "paper",
            nodes=None,
            rtt="uniform:0ms",
            link_gbit=None,
            tcp_buffer="auto",
            file_size=None,
            largest_rtt_ms=largest_rtt,
        )


def test_lab_up_help_lists_the_profile_and_what_it_sets() -> None:
    parser = build_parser()
    actions = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    up = actions["lab"]._subparsers._group_actions[0].choices["up"]
    text = " ".join(up.format_help().split())
    assert "--profile {paper}" in text
    assert f"paper: {PAPER.nodes} nodes on the prp RTTs, 2 Gbit/s links, --tcp-buffer auto" in text
    assert "--tcp-buffer SIZE|auto" in text
    args = parser.parse_args(["lab", "up", "--profile", "paper", "--tcp-buffer", "AUTO"])
    assert (args.profile, args.tcp_buffer, args.nodes, args.file_size) == (
        "paper",
        "auto",
        None,
        None,
    )
    assert parser.parse_args(["lab", "up", "--tcp-buffer", "16MiB"]).tcp_buffer == 16 * MiB


def test_the_profile_is_kept_in_the_run_record_and_the_inventory(tmp_path: Path) -> None:
    record = LabRun(tmp_path / "run.json", "netns", LabNetwork(prefix="tpcrt"), profile="paper")
    record.save()
    assert LabRun.load(tmp_path / "run.json").profile == "paper"
    creds = ClientCredentials(tmp_path / "c.pem", tmp_path / "k.pem", tmp_path)
    profile = {"name": "paper", "given": ["nodes"], "file_size_rule": None}
    inventory = LabInventory([Endpoint("lab-1", "10.99.1.2")], creds, MiB, profile=profile)
    assert LabInventory.from_json(inventory.to_json()).profile == profile
    older = inventory.to_json()
    del older["profile"]  # an inventory written before profiles: none
    assert LabInventory.from_json(older).profile == {}


def test_a_site_labs_buffer_follows_the_narrower_of_host_link_and_site_uplink() -> None:
    def site_lab(link: float | None, uplink: float | None) -> int:
        choice = choose_lab(
            None, nodes=4, rtt="prp", link_gbit=link, tcp_buffer="auto", file_size=None,
            largest_rtt_ms=largest_rtt, site_link_gbit=uplink,
        )  # fmt: skip
        return choice.buffer.buffer_max

    # prp's largest RTT at 2 Gbit/s asks for 64 MiB (above); a 2 Gbit/s uplink alone does too
    assert site_lab(None, 2.0) == site_lab(2.0, None) == site_lab(2.0, 10.0) == 64 * MiB
    assert site_lab(10.0, 2.0) == 64 * MiB  # the uplink, not the 10 Gbit/s host link
    assert site_lab(10.0, None) > 64 * MiB

"""Campaigns that fit their cycle: a rotation over consecutive cycles, or shorter work.

The cycle is the time between the schedule's next two firings (12 h for "0 0,12 * * *"),
less the slip. When a campaign's estimate (`estimate.py`) does not fit it:

- "rotate" (the default): the ordered pairs are split into k parts, one part per cycle, so
  every ordered pair is still measured every k cycles. The pairs, in the order of a
  round-robin tournament's rounds (each round holds every node at most once), are cut into
  parts filled up to the cycle: no node's work, nor all the work over the parallel pairs,
  exceeds it; if a part's estimated schedule still overruns, the parts are filled 5% less.
  So k is close to ceil(bound / cycle), which no rotation can beat (`k_min`, said beside
  it). The cuts and the next part are kept in $TPCBENCH_HOME/rotation.json (written
  atomically): the next campaign, after a restart too, continues the rotation with the
  same parts whatever the estimates learnt meanwhile; a new rotation is planned when one
  ends, or when the nodes or the kinds of measurement change.
- "shorten": fewer checks per cycle: only the first stream setting, then only the first
  checksum, client, auth and protocol, until it fits (and a rotation if even one check per
  pair does not).
- "off": the whole mesh anyway, with a warning that it will overrun.

Whatever it does is said: the log, `campaign plan` and the journal (`CycleFit.to_json`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.campaign.cycle_times import cycle_seconds
from orchestrator.campaign.estimate import (
    CampaignEstimate,
    DurationHistory,
    estimate_campaign,
    hours,
    kind_of,
    lower_bound,
)
from orchestrator.campaign.planner import _circle_rounds
from orchestrator.measurement.spec import MeasurementSpec
from orchestrator.paths import tpcbench_home
from orchestrator.report.spool import write_json_atomically

log = logging.getLogger(__name__)

FIT_MODES = ("rotate", "shorten", "off")
SHORTEN_ORDER = ("streams", "checksum", "client", "auth", "protocol")
Pair = tuple[str, str]


def directed_rounds(names: Sequence[str]) -> tuple[dict[Pair, int], int]:
    """Each ordered pair's round, and how many rounds: a round-robin tournament (circle
    method) whose every round is played both ways, a -> b in round 2r and b -> a in round
    2r + 1 (so a part of consecutive rounds has each node sending and receiving alike)."""
    ordered = sorted(set(names))
    rounds = _circle_rounds(ordered)
    half = len(ordered) - 1 if len(ordered) % 2 == 0 else len(ordered)
    directed: dict[Pair, int] = {}
    for pair, r in rounds.items():
        a, b = sorted(pair)
        directed[(a, b)] = 2 * r
        directed[(b, a)] = 2 * r + 1
    return directed, 2 * half


def pair_order(specs: Sequence[MeasurementSpec]) -> dict[Pair, list[MeasurementSpec]]:
    """The ordered pairs' measurements, the pairs in round order (from the node names
    alone, so the same nodes give the same order: a rotation's cuts stay valid)."""
    names = sorted({n for spec in specs for n in (spec.src, spec.dst)})
    rounds, _ = directed_rounds(names)
    by_pair: dict[Pair, list[MeasurementSpec]] = {}
    for spec in specs:
        by_pair.setdefault((spec.src, spec.dst), []).append(spec)
    return {pair: by_pair[pair] for pair in sorted(by_pair, key=lambda p: (rounds[p], p))}


def fill_cuts(
    order: dict[Pair, list[MeasurementSpec]],
    estimate: Callable[[MeasurementSpec], float],
    cap: float,
    max_parallel: int,
    full_duplex: bool = False,
) -> list[int]:
    """Where to cut the pairs (in `order`) into parts: each part takes pairs in order while
    every node's work in it (full duplex: each direction's) and all its work over the
    parallel pairs stay within `cap` seconds. Returns each part's first pair's index."""
    cuts = [0]
    load: dict[tuple[str, str], float] = {}
    total = 0.0
    for index, (pair, measurements) in enumerate(order.items()):
        cost = sum(estimate(spec) for spec in measurements)
        src, dst = pair
        keys = (("send", src), ("receive", dst)) if full_duplex else (("", src), ("", dst))
        over = any(load.get(key, 0.0) + cost > cap for key in keys)
        if index > cuts[-1] and (over or (total + cost) / max_parallel > cap):
            cuts.append(index)
            load, total = {}, 0.0
        for key in keys:
            load[key] = load.get(key, 0.0) + cost
        total += cost
    return cuts


def parts_at(
    order: dict[Pair, list[MeasurementSpec]], cuts: Sequence[int]
) -> list[list[MeasurementSpec]]:
    """The parts between the cuts (the last one to the end)."""
    pairs = list(order.values())
    ends = [*cuts[1:], len(pairs)]
    return [
        [spec for group in pairs[a:b] for spec in group] for a, b in zip(cuts, ends, strict=True)
    ]


@dataclass
class Rotation:
    cuts: list[int]  # each part's first pair, in round order
    parts: list[list[MeasurementSpec]]
    estimates: list[CampaignEstimate]
    k_min: int  # ceil(bound / cycle): no rotation can be shorter
    fits: bool  # False: no split found whose every part fits

    @property
    def k(self) -> int:
        return len(self.parts)

    @property
    def worst(self) -> float:
        return max(e.makespan for e in self.estimates)


TRIES = 12  # each try fills the parts 5% less full


def plan_rotation(
    specs: Sequence[MeasurementSpec],
    max_parallel: int,
    history: DurationHistory,
    budget: float,
    *,
    cuts: Sequence[int] | None = None,
    full_duplex: bool = False,
) -> Rotation:
    """The fewest parts whose every estimated schedule fits `budget` seconds: the parts are
    filled up to the budget (then 5% less, and so on, while a schedule overruns); or the
    parts at the given `cuts` (a rotation under way)."""
    bound = lower_bound(specs, max_parallel, history.estimate, full_duplex)
    k_min = max(1, math.ceil(bound / budget)) if budget > 0 else 1
    order = pair_order(specs)

    def at(chosen: Sequence[int]) -> Rotation:
        parts = parts_at(order, chosen)
        estimates = [
            estimate_campaign(part, max_parallel, history, full_duplex=full_duplex)
            for part in parts
        ]
        rotation = Rotation(list(chosen), parts, estimates, k_min, False)
        rotation.fits = rotation.worst <= budget
        return rotation

    if cuts is not None:
        return at(cuts)

    def cuts_at(cap: float) -> list[int]:
        return fill_cuts(order, history.estimate, cap, max_parallel, full_duplex)

    cap = budget
    for _ in range(TRIES):
        rotation = at(cuts_at(cap))
        if rotation.fits:
            break
        cap *= 0.95
    else:
        return rotation
    # The same k with the parts evened out (the smallest cap that still gives k parts), so
    # no cycle is full to the brim while the last is nearly empty.
    low, high = bound / rotation.k, cap
    for _ in range(12):
        middle = (low + high) / 2
        low, high = (low, middle) if len(cuts_at(middle)) <= rotation.k else (middle, high)
    even = at(cuts_at(high))
    return even if even.fits and even.k <= rotation.k else rotation


def rotation_path(home: Path | None = None) -> Path:
    return (home or tpcbench_home()) / "rotation.json"


def plan_signature(specs: Sequence[MeasurementSpec]) -> str:
    """What a rotation belongs to: the nodes and the kinds of measurement."""
    names = sorted({n for spec in specs for n in (spec.src, spec.dst)})
    kinds = sorted({f"{kind_of(spec)}/{spec.scope}" for spec in specs})
    text = json.dumps([names, kinds])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_rotation(home: Path | None = None) -> dict[str, Any]:
    path = rotation_path(home)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        return state if isinstance(state, dict) else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("unreadable rotation state %s (%s); a new rotation starts", path, exc)
        return {}


@dataclass
class CycleFit:
    """What a campaign measures of its plan in this cycle, and why."""

    mode: str  # fits | rotate | shorten | over
    specs: list[MeasurementSpec]
    estimate: CampaignEstimate  # of the whole plan
    cycle: float | None  # seconds; None: no cycle (a campaign run by hand)
    budget: float | None = None  # the cycle less the slip
    cycle_estimate: CampaignEstimate | None = None  # of what runs in this cycle
    k: int = 1
    k_min: int = 1
    part: int = 0  # 0-based: which of the k parts this cycle measures
    dropped: dict[str, list[Any]] = field(default_factory=dict)  # shorten: values left out
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "cycle_seconds": self.cycle,
            "budget_seconds": self.budget,
            "estimate": self.estimate.to_json(),
            "cycle_estimate": (self.cycle_estimate or self.estimate).to_json(),
            "k": self.k,
            "k_min": self.k_min,
            "part": self.part + 1,
            "dropped": self.dropped,
            "message": self.message,
        }


def fit_cycle(
    specs: Sequence[MeasurementSpec],
    *,
    max_parallel: int,
    history: DurationHistory,
    cycle: float | None,
    slip: float = 0.0,
    mode: str = "rotate",
    home: Path | None = None,
    advance: bool = True,
    said: Callable[[str], None] | None = None,
    full_duplex: bool = False,
) -> CycleFit:
    """Which of `specs` this cycle measures. `advance=False` (campaign plan): the rotation
    state is read, never written."""
    if mode not in FIT_MODES:
        raise ValueError(f"cycle_fit {mode!r} is not one of {', '.join(FIT_MODES)}")
    say, warn = (said, said) if said is not None else (log.info, log.warning)
    whole = estimate_campaign(specs, max_parallel, history, full_duplex=full_duplex)
    fit = CycleFit("fits", list(specs), whole, cycle)
    if cycle is None:
        fit.message = f"{whole.describe()}; no cycle (not scheduled): the whole mesh"
        say(fit.message)
        return fit
    fit.budget = budget = max(cycle - slip, 1.0)
    if whole.makespan <= budget:
        fit.message = f"{whole.describe()}; fits the {hours(cycle)} cycle"
        say(fit.message)
        return fit
    over = f"{whole.describe()}; longer than the {hours(cycle)} cycle"
    if mode == "off":
        fit.mode = "over"
        fit.message = f"{over}: measuring the whole mesh anyway (cycle_fit = off)"
        warn(fit.message)
        return fit
    remaining = list(specs)
    if mode == "shorten":
        fit.mode = "shorten"
        for name in SHORTEN_ORDER:
            values = list(dict.fromkeys(getattr(spec, name) for spec in remaining))
            if len(values) < 2:
                continue
            remaining = [spec for spec in remaining if getattr(spec, name) == values[0]]
            fit.dropped[name] = values[1:]
            fit.cycle_estimate = estimate_campaign(
                remaining, max_parallel, history, full_duplex=full_duplex
            )
            if fit.cycle_estimate.makespan <= budget:
                break
        fit.specs = remaining
        left = ", ".join(f"{n} {', '.join(map(str, v))}" for n, v in fit.dropped.items())
        short = fit.cycle_estimate or whole
        if short.makespan <= budget:
            fit.message = f"{over}: shortened (cycle_fit = shorten), left out {left}: " + (
                f"{len(remaining)} measurements, {hours(short.makespan)}"
            )
            warn(fit.message)
            return fit
        over += f"; shortened, left out {left}, still {hours(short.makespan)}"
    rotation_for(fit, remaining, max_parallel, history, home, advance, over, full_duplex)
    warn(fit.message)
    return fit


def rotation_for(
    fit: CycleFit,
    specs: list[MeasurementSpec],
    max_parallel: int,
    history: DurationHistory,
    home: Path | None,
    advance: bool,
    over: str,
    full_duplex: bool = False,
) -> None:
    """Fill `fit` with this cycle's part of a rotation, continuing the stored one."""
    assert fit.budget is not None
    signature = plan_signature(specs)
    state = load_rotation(home)
    cuts = state.get("cuts")
    pairs = len({(spec.src, spec.dst) for spec in specs})
    valid = (
        isinstance(cuts, list)
        and len(cuts) > 1
        and all(isinstance(c, int) for c in cuts)
        and cuts == sorted(set(cuts))
        and cuts[0] == 0
        and cuts[-1] < pairs
    )
    same = state.get("signature") == signature and valid
    part = int(state.get("next", 0)) if same else 0
    if same and 0 < part < len(cuts):  # the rotation under way goes on with its parts
        rotation = plan_rotation(
            specs, max_parallel, history, fit.budget, cuts=cuts, full_duplex=full_duplex
        )
        how = f"continuing the rotation of {rotation.k} cycles"
    else:
        rotation = plan_rotation(specs, max_parallel, history, fit.budget, full_duplex=full_duplex)
        part = 0
        how = f"a new rotation of {rotation.k} cycles" + ("" if same else " (new plan)")
    fit.mode = "rotate"
    fit.k, fit.k_min, fit.part = rotation.k, rotation.k_min, part
    fit.specs = rotation.parts[part]
    fit.cycle_estimate = rotation.estimates[part]
    if advance:
        write_json_atomically(
            rotation_path(home),
            {
                "signature": signature,
                "k": fit.k,
                "cuts": rotation.cuts,
                "next": (part + 1) % fit.k,
                "cycle_seconds": fit.cycle,
            },
        )
    fit.message = (
        f"{over}: {how}, every ordered pair once every {fit.k} cycles (no fewer than "
        f"{fit.k_min} can fit): this cycle part {part + 1}/{fit.k}, {len(fit.specs)} "
        f"measurements, {hours(fit.cycle_estimate.makespan)}"
    )
    if not rotation.fits:
        fit.message += "; still longer than the cycle: the rest will be missed"


def preview_fit(
    specs: Sequence[MeasurementSpec],
    *,
    schedule: str,
    slip: float,
    mode: str,
    max_parallel: int,
    now: datetime,
    home: Path | None = None,
    full_duplex: bool = False,
) -> CycleFit:
    """What the next scheduled campaign would measure of `specs` (`campaign plan`): the
    durations and the rotation state are read, never written, and nothing is logged."""
    history = DurationHistory.load(home)
    return fit_cycle(
        specs,
        max_parallel=max_parallel,
        history=history,
        cycle=cycle_seconds(schedule, now),
        slip=slip,
        mode=mode,
        home=home,
        advance=False,
        said=lambda message: None,
        full_duplex=full_duplex,
    )

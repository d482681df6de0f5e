"""What `tpcbench reproduce` runs on the paper-profile lab, at a scale: the preliminary sweeps
(Figures 3 and 4) and the campaigns (Figures 5, 7 and 8 and the three findings).

Pure: the plan is made from the lab's inventory; running it is run.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.errors import UserError
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.paper_profile import PAPER, PaperProfile
from orchestrator.sizes import format_size

RESTART = "tpcbench lab down && tpcbench lab up --profile paper"


@dataclass(frozen=True)
class Scale:
    """How much of the paper profile's work to do."""

    name: str
    transfers: int  # K
    repetitions: int  # campaigns
    baseline_seconds: int
    baseline_omit: int
    prelim_max: int  # concurrency levels 1..max of Figure 3's sweep
    filesize_max: int  # and of Figure 4's
    filesize_multiples: tuple[int, ...]  # Figure 4's files, in lab files
    lab_file_size: int | None  # the source file the lab must hold; None: the profile's choice


def paper_scale(profile: PaperProfile = PAPER) -> Scale:
    return Scale(
        name="paper",
        transfers=profile.transfers,
        repetitions=profile.repetitions,
        baseline_seconds=profile.baseline_seconds,
        baseline_omit=profile.baseline_omit,
        prelim_max=profile.prelim_max,
        filesize_max=profile.filesize_max,
        filesize_multiples=profile.filesize_multiples,
        lab_file_size=None,
    )


# The suite's end-to-end run: every step, at a size that takes a couple of minutes.
TINY = Scale(
    name="tiny",
    transfers=2,
    repetitions=1,
    baseline_seconds=2,
    baseline_omit=1,
    prelim_max=2,
    filesize_max=2,
    filesize_multiples=(1, 2),
    lab_file_size=1 << 20,
)
SCALES = {"paper": paper_scale(), "tiny": TINY}


@dataclass(frozen=True)
class ReproducePlan:
    """Every step of one reproduction, with the numbers it runs at."""

    scale: Scale
    profile: PaperProfile
    nodes: list[str]
    file_size: int  # the lab's source file: every campaign's transfers
    repetitions: int
    prelim_node: str
    given: tuple[str, ...] = ()  # the profile's lab settings that were overridden

    @property
    def filesize_sizes(self) -> list[int]:
        """Figure 4's files, scaled like the campaign's: the paper's 1, 2, 5, 10 x its file."""
        return [self.file_size * m for m in self.scale.filesize_multiples]

    @property
    def pairs(self) -> int:
        return len(self.nodes) * (len(self.nodes) - 1)

    @property
    def per_campaign(self) -> int:
        """Measurements per campaign: every ordered pair x protocols x streams."""
        return self.pairs * len(self.profile.protocols) * len(self.profile.streams)

    def campaign_flags(self) -> dict[str, Any]:
        """The campaign settings, as `tpcbench campaign run` flags (campaign/settings.py)."""
        profile, scale = self.profile, self.scale
        return {
            "protocols": ",".join(profile.protocols),
            "streams": ",".join(map(str, profile.streams)),
            "auth": profile.auth,
            "client": profile.client,
            "transfers": str(scale.transfers),
            "max_parallel_pairs": "1",  # the paper's: no node in two measurements at once
            "baseline": "true",
            "baseline_seconds": str(scale.baseline_seconds),
            "baseline_omit": str(scale.baseline_omit),
        }

    def describe(self) -> list[str]:
        """What will run, for the header of `tpcbench reproduce`."""
        profile, scale = self.profile, self.scale
        given = f" (given instead of the profile's: {', '.join(self.given)})" if self.given else ""
        sizes = ",".join(format_size(s) for s in self.filesize_sizes)
        return [
            f"scale {scale.name} on the {profile.name} profile's lab: {len(self.nodes)} nodes, "
            f"{format_size(self.file_size)} files{given}",
            f"Figure 3: prelim concurrency on {self.prelim_node}, 1..{scale.prelim_max} copies "
            f"of {format_size(self.file_size)} (cp, https, gridftp)",
            f"Figure 4: prelim filesize on {self.prelim_node}, 1..{scale.filesize_max} copies "
            f"of {sizes} (https)",
            f"{self.repetitions} campaign(s) of {self.per_campaign} measurements: {self.pairs} "
            f"ordered pairs x {'/'.join(profile.protocols)} x "
            f"{'/'.join(map(str, profile.streams))} streams, K = {scale.transfers}, each pair's "
            f"link first (iperf3, {scale.baseline_seconds} s after {scale.baseline_omit} s)",
        ]


def plan_reproduction(
    inventory: LabInventory, scale: Scale, repetitions: int | None = None
) -> ReproducePlan:
    """The plan for this lab, or a UserError saying which lab to start."""
    check_paper_lab(inventory, scale)
    if repetitions is not None and repetitions < 1:
        raise UserError(f"--repetitions must be at least 1, not {repetitions}")
    nodes = sorted((n.name for n in inventory.nodes), key=_node_order)
    return ReproducePlan(
        scale=scale,
        profile=PAPER,
        nodes=nodes,
        file_size=inventory.file_size,
        repetitions=repetitions or scale.repetitions,
        prelim_node=nodes[0],
        given=tuple(inventory.profile.get("given") or ()),
    )


def check_paper_lab(inventory: LabInventory, scale: Scale) -> None:
    name = inventory.profile.get("name")
    if name != PAPER.name:
        runs = f"the {name} profile" if name else "no profile"
        raise UserError(
            f"the running lab is not the paper profile's ({runs}, {len(inventory.nodes)} nodes); "
            f"restart it with: {RESTART}{_tiny_options(scale)}"
        )
    if len(inventory.nodes) < 3:
        raise UserError(
            f"the lab has {len(inventory.nodes)} nodes; the findings need pairs of 3 RTTs at "
            f"least: {RESTART}{_tiny_options(scale)}"
        )
    if scale.lab_file_size is not None and inventory.file_size != scale.lab_file_size:
        raise UserError(
            f"scale {scale.name} transfers {format_size(scale.lab_file_size)} files, the lab "
            f"holds {format_size(inventory.file_size)}; restart it with: {RESTART}"
            f"{_tiny_options(scale)}"
        )


def _tiny_options(scale: Scale) -> str:
    if scale.lab_file_size is None:
        return ""
    return f" --nodes 3 --file-size {format_size(scale.lab_file_size)}"


def _node_order(name: str) -> tuple[int, str]:
    number = name.rsplit("-", 1)[-1]
    return (int(number), name) if number.isdigit() else (1 << 30, name)

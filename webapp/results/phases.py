"""Where a transfer's time goes (docs/measurements.md): its phases, in the order they happen.

The database keeps phases as JSON, whose key order PostgreSQL does not keep; the order is
the orchestrator's (orchestrator/transfers/phases.py), phases of other names after them.
"""

import re
import statistics
from collections.abc import Iterable

PHASE_ORDER = (
    "authorize", "redirect", "connect", "handshake", "request", "streaming", "poll", "close",
    "checksum",
)  # fmt: skip
# Setup: request to first progress, the phases before `streaming` (`authorize`, asking the
# other server for a macaroon, and `redirect`, from the first request to a redirector until
# the request goes to the final data server, among them). `checksum`, the digests compared
# once the copy is done, comes after the copy (docs/measurements.md).
SETUP_PHASES = PHASE_ORDER[: PHASE_ORDER.index("streaming")]
CHECKSUM_PHASE = "checksum"
REDIRECT_PHASE = "redirect"
PHASE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MAX_PHASES = 16
# Phases may exceed the duration by rounding: 5% of it plus this many seconds.
SUM_TOLERANCE = 0.05
SUM_SLACK_S = 0.01


def phase_names(names: Iterable[str]) -> list[str]:
    """`names` in phase order: the known ones as they happen, others by name after them."""
    present = set(names)
    known = [name for name in PHASE_ORDER if name in present]
    return known + sorted(present.difference(PHASE_ORDER))


def ordered_phases(phases: dict[str, float]) -> dict[str, float]:
    return {name: phases[name] for name in phase_names(phases)}


def phases_fit(phases: dict[str, float], duration_s: float) -> bool:
    """Whether the phases add up to no more than the duration (with rounding's tolerance)."""
    return sum(phases.values()) <= duration_s * (1 + SUM_TOLERANCE) + SUM_SLACK_S


def setup_s(phases: dict[str, float]) -> float | None:
    """The phases before `streaming`; None when none was recorded."""
    found = [phases[name] for name in SETUP_PHASES if name in phases]
    return sum(found) if found else None


def median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None

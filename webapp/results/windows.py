"""Time windows of the query API and the grid: "latest" (campaign), "<N>h", "<N>d"."""

import re
from dataclasses import dataclass
from datetime import timedelta

WINDOW_SYNTAX = "'latest', '<N>h' or '<N>d' (N a whole number, at most 3650 days)"
_DURATION = re.compile(r"^([1-9][0-9]{0,5})([hd])$")
_MAX = timedelta(days=3650)
# What the API takes, as its schema states it: exactly the forms parse_window reads, lowercase
# and unpadded, N bounded as _MAX bounds it (1-3650 days, 1-87600 hours).
_DAYS = r"(?:[1-9][0-9]{0,2}|[12][0-9]{3}|3[0-5][0-9]{2}|36[0-4][0-9]|3650)d"
_HOURS = r"(?:[1-9][0-9]{0,3}|[1-7][0-9]{4}|8[0-6][0-9]{3}|87[0-5][0-9]{2}|87600)h"
WINDOW_PATTERN = rf"^(?:latest|{_DAYS}|{_HOURS})$"


@dataclass(frozen=True)
class Window:
    """A parsed window: the latest campaign (duration None) or the last `duration` of time."""

    label: str
    duration: timedelta | None

    @property
    def is_latest(self) -> bool:
        return self.duration is None


def parse_window(value: str) -> Window:
    """'latest' | '<N>h' | '<N>d' -> Window; anything else raises ValueError saying why."""
    text = (value or "").strip().lower()
    if text == "latest":
        return Window(label="latest", duration=None)
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"invalid window {value!r}: expected {WINDOW_SYNTAX}")
    amount, unit = int(match.group(1)), match.group(2)
    duration = timedelta(hours=amount) if unit == "h" else timedelta(days=amount)
    if duration > _MAX:
        raise ValueError(f"invalid window {value!r}: expected {WINDOW_SYNTAX}")
    return Window(label=text, duration=duration)

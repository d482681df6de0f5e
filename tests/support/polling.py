"""Waiting for a state that comes with time, in tests: poll, and fail saying what never came."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

# Generous: the machine is shared and has two cores. Only a state that never comes fails.
EVENTUALLY_TIMEOUT = 180.0


def poll_until(
    probe: Callable[[], T],
    accept: Callable[[T], bool],
    what: str,
    timeout: float = EVENTUALLY_TIMEOUT,
    interval: float = 0.5,
) -> T:
    """Poll `probe` every `interval` seconds until `accept` takes its value; fail with the
    last value if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"never reached: {what}; last value: {value!r}")
        time.sleep(interval)

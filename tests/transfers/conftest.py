"""The transfer tests judge leftover processes by what they started themselves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import processes


@pytest.fixture(autouse=True)
def _processes_before_the_test() -> Iterator[None]:
    """Remember what already ran, so leftover checks judge only what the test started."""
    processes.already_running = processes.descendants()
    yield
    processes.already_running = set()

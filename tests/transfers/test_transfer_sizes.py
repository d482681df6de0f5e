"""File sizes as typed on the command line."""

from __future__ import annotations

import pytest

from orchestrator.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("1073741824", 2**30),
        ("1GiB", 2**30),
        ("1G", 2**30),
        ("8MiB", 8 << 20),
        ("4k", 4096),
        ("16Gi", 16 << 30),  # a Kubernetes quantity, as the chart's values give it
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "lots", "1.5GiB", "-1", "1PB", "16i", "1Gx"])
def test_parse_size_rejects_with_a_hint(text: str) -> None:
    with pytest.raises(ValueError, match=r"write e\.g\. 1GiB"):
        parse_size(text)


def test_format_size_round_trips() -> None:
    assert [format_size(s) for s in (2**30, 8 << 20, 1000)] == ["1GiB", "8MiB", "1000B"]
    assert parse_size(format_size(3 << 20)) == 3 << 20

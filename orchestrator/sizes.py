"""Byte sizes as people type them: 1073741824, 1GiB, 8MiB, 1G, or Kubernetes' 16Gi (binary
units, like dd).

Ours, not pydantic's ByteSize (measured on pydantic 2.14): ByteSize reads 1G and 1GB as 10**9
where tpcbench, like dd and the paper's 1 GiB, means 2**30; it does not know 16Gi; it takes 0,
1.5GiB, bits (1Gbit) and trailing text (`1GiB trailing`); and its human_readable() rounds
(1536MiB -> 1.5GiB, 8MiB -> 8.0MiB) where format_size must be exact. On top of it our grammar
would stay as this regex, for one multiplication, and importing pydantic costs every `tpcbench`
command about 0.2 s (none imports it today).
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:i?B|(?<=[KMGT])i)?\s*$", re.I)


def parse_size(text: str) -> int:
    """Bytes in `text`; raises ValueError with a hint on anything else."""
    match = _SIZE.match(text)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is not a size; write e.g. 1GiB, 256MiB or 1073741824")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def format_size(size: int) -> str:
    """The largest binary unit that divides `size` exactly, e.g. 1GiB, 8MiB, 1000B."""
    for suffix, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size % factor == 0:
            return f"{size // factor}{suffix}"
    return f"{size}B"


def size_argument(text: str) -> int:
    """`parse_size` as an argparse type: a bad size is a usage error naming the value."""
    import argparse

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

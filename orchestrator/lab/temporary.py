"""A lab for the length of a `with`: its own home (with a CA), its nodes, then nothing left.

The benchmarks use it for a lab beside the user's own (another prefix and subnet).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ca.authority import CertificateAuthority
from orchestrator.lab.inventory import LabInventory
from orchestrator.lab.lifecycle import start_lab, stop_lab


@contextmanager
def temporary_lab(
    prefix: str, nodes: int, file_size: int, **options: Any
) -> Iterator[tuple[Path, LabInventory]]:
    """`start_lab(home, nodes, file_size, **options)` in a fresh home under /dev/shm; yields
    the home (for more servers on its nodes: extra_servers.py) and the inventory."""
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/dev/shm"))
    home.chmod(0o755)  # the lab's server account must reach it
    try:
        CertificateAuthority.init(home / "ca")
        inventory = start_lab(home, nodes, file_size, **options)
        try:
            yield home, inventory
        finally:
            stop_lab(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)

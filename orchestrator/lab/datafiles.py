"""Node data on tmpfs: one directory per lab, one folder per node."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from orchestrator.errors import UserError

DEFAULT_DATA_PARENT = Path("/dev/shm")  # tmpfs on every Linux machine


def data_parent() -> Path:
    """Where node data directories go: TPCBENCH_LAB_DATA, else /dev/shm."""
    parent = Path(os.environ.get("TPCBENCH_LAB_DATA", str(DEFAULT_DATA_PARENT)))
    if not parent.is_dir():
        raise UserError(
            f"{parent} does not exist; the lab keeps node data on tmpfs there "
            "(set TPCBENCH_LAB_DATA to a tmpfs directory)"
        )
    return parent


def lab_data_dir(prefix: str) -> Path:
    """One directory per lab (per user and prefix), holding one folder per node."""
    return data_parent() / f"tpcbench-{os.geteuid()}-{prefix}"


def copy_source_file(source: Path, target: Path) -> None:
    """A copy with the source's mtime and extended attributes: its stored digest stays valid."""
    try:
        shutil.copy2(source, target)
    except OSError as exc:
        raise UserError(f"cannot copy the source file to {target}: {exc.strerror}") from None

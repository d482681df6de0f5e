"""Node data on tmpfs and the source file every transfer reads.

The source is an AES-CTR keystream: unique bytes everywhere (a misplaced 16 MiB range
changes the checksum) and written at memory speed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from orchestrator.errors import UserError

CHUNK = 16 << 20
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


def write_source_file(path: Path, size: int) -> None:
    """`size` pseudo-random bytes at `path`."""
    encryptor = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16))).encryptor()
    zeros = bytes(CHUNK)
    tmp = path.with_name(path.name + ".partial")
    try:
        with open(tmp, "wb") as out:
            remaining = size
            while remaining > 0:
                block = encryptor.update(zeros[: min(CHUNK, remaining)])
                out.write(block)
                remaining -= len(block)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(
            f"cannot write the {size}-byte source file {path}: {exc.strerror}"
        ) from None
    os.replace(tmp, path)


def copy_source_file(source: Path, target: Path) -> None:
    try:
        shutil.copyfile(source, target)
    except OSError as exc:
        raise UserError(f"cannot copy the source file to {target}: {exc.strerror}") from None

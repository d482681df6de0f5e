"""The source file every transfer reads, written where a server can serve it.

The source is an AES-CTR keystream: unique bytes everywhere (a misplaced 16 MiB range
changes the checksum) and written at memory speed. The lab writes it for its nodes; a
server container writes its own at start (`python -m orchestrator.servers ... --source-size`).
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from orchestrator.endpoints import in_token_area, source_name
from orchestrator.errors import UserError

CHUNK = 16 << 20
SOURCE_MODE = 0o444


def source_path(data_root: Path, size: int) -> Path:
    """Where the source file of `size` bytes lives under a server's data root."""
    return Path(data_root) / source_name(size).lstrip("/")


def ensure_source_file(data_root: Path, size: int) -> tuple[Path, bool]:
    """The source file under `data_root`, written unless one of the right size is there.

    Returns its path and whether it was written now.
    """
    path = source_path(data_root, size)
    try:
        if path.stat().st_size == size:
            return path, False
    except FileNotFoundError:
        pass
    write_source_file(path, size)
    return path, True


def ensure_token_source(data_root: Path, size: int) -> Path:
    """The token area under `data_root` with the source file in it: a hard link to the
    source (no second copy in memory), so token transfers read the very same bytes."""
    source = source_path(data_root, size)
    linked = Path(data_root) / in_token_area(source_name(size)).lstrip("/")
    linked.parent.mkdir(exist_ok=True)
    os.chmod(linked.parent, 0o755)
    try:
        if os.path.samefile(source, linked):
            return linked
        linked.unlink()
    except FileNotFoundError:
        pass
    try:
        os.link(source, linked)
    except OSError as exc:
        raise UserError(
            f"cannot link the source file into {linked.parent}: {exc.strerror}"
        ) from None
    return linked


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
    # Read-only, for its owner too: the servers' own account (GridFTP's mapped user) cannot
    # overwrite the file every measurement reads.
    os.chmod(tmp, SOURCE_MODE)
    os.replace(tmp, path)

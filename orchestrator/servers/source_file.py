"""The source file every transfer reads, written where a server can serve it.

The source is an AES-CTR keystream: unique bytes everywhere (a misplaced 16 MiB range
changes the checksum) and written at memory speed. The lab writes it for its nodes; a
server container writes its own at start (`python -m orchestrator.servers ... --source-size`).

Its adler32 is stored with it, as WLCG storage stores a file's checksum when it is written:
in the extended attribute where XRootD keeps the digests it computes (`user.XrdCks.adler32`,
XrdCksData as XRootD writes it), stamped with the file's mtime. The file is read-only, so
XRootD could not store a digest it computed; without this, every checksum step would read
the whole source again. A filesystem without user attributes just goes without.
"""

from __future__ import annotations

import errno
import os
import struct
import zlib
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from orchestrator.endpoints import in_token_area, source_name
from orchestrator.errors import UserError

CHUNK = 16 << 20
SOURCE_MODE = 0o444
# XRootD's stored digest: XrdCksData in network byte order (name[16], the file's mtime, the
# seconds from it to the computation, two reserved fields, the value's length, value[64]).
XRDCKS_ADLER32 = "user.XrdCks.adler32"
_XRDCKS_DATA = struct.Struct(">16sqihbb64s")


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
    adler32 = 1
    try:
        with open(tmp, "wb") as out:
            remaining = size
            while remaining > 0:
                block = encryptor.update(zeros[: min(CHUNK, remaining)])
                out.write(block)
                adler32 = zlib.adler32(block, adler32)
                remaining -= len(block)
        store_adler32(tmp, adler32)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(
            f"cannot write the {size}-byte source file {path}: {exc.strerror}"
        ) from None
    # Read-only, for its owner too: the servers' own account (GridFTP's mapped user) cannot
    # overwrite the file every measurement reads.
    os.chmod(tmp, SOURCE_MODE)
    os.replace(tmp, path)


def xrdcks_adler32(adler32: int, mtime: int) -> bytes:
    """The attribute XRootD reads as the stored adler32 of a file last modified at `mtime`."""
    return _XRDCKS_DATA.pack(b"adler32", mtime, 0, 0, 0, 4, adler32.to_bytes(4, "big"))


def stored_adler32(path: Path) -> int | None:
    """The adler32 stored with `path`, if there is one and it is not stale (XRootD's rule:
    it was stored for the file's present mtime)."""
    try:
        data = os.getxattr(path, XRDCKS_ADLER32)
    except OSError:
        return None
    name, mtime, _, _, _, length, value = _XRDCKS_DATA.unpack(data)
    if name.rstrip(b"\0") != b"adler32" or mtime != int(os.stat(path).st_mtime) or length != 4:
        return None
    return int.from_bytes(value[:4], "big")


def store_adler32(path: Path, adler32: int) -> None:
    """Store `adler32` with `path` as XRootD stores a digest it computed; nothing where the
    filesystem keeps no user attributes."""
    try:
        os.setxattr(path, XRDCKS_ADLER32, xrdcks_adler32(adler32, int(os.stat(path).st_mtime)))
    except OSError as exc:
        if exc.errno not in (errno.ENOTSUP, errno.EPERM, errno.EACCES):
            raise

"""Files whose digests the tests know, on a lab's real XRootD servers.

`stale_digest_copy` makes the deterministic checksum mismatch the checksum step must catch:
a source file whose stored digest is not its content's, as a corrupted replica presents it.
XRootD keeps a computed digest in the file's `user.XrdCks.<algorithm>` extended attribute,
stamped with the file's modification time, and serves it while the file's mtime still
matches. So the test asks the server for another file's digest, copies that attribute onto
the source and gives the source the other file's mtime: the server then answers the other
file's digest for the source, while every byte copied is the source's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zlib
from pathlib import Path

from orchestrator.endpoints import Endpoint
from orchestrator.transfers.urls import root_server

XATTR = "user.XrdCks.adler32"


def adler32_hex(path: Path) -> str:
    value = 1
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            value = zlib.adler32(chunk, value)
    return f"{value:08x}"


def server_digest(endpoint: Endpoint, name: str, env: dict[str, str]) -> str:
    """The server's adler32 of `name` (root:// `query checksum`), which it then keeps."""
    answer = subprocess.run(
        ["xrdfs", root_server(endpoint), "query", "checksum", name],
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    algorithm, _, value = answer.stdout.strip().partition(" ")
    assert algorithm == "adler32", answer.stdout
    return value


def stale_digest_copy(
    endpoint: Endpoint, source: str, name: str, env: dict[str, str]
) -> tuple[str, str]:
    """A copy of `source` at `name` (both under the endpoint's data root) whose stored adler32
    is another file's; returns (its content's adler32, the adler32 the server will give)."""
    root = Path(endpoint.data_root)
    original, decoy = root / source.lstrip("/"), root / (name.lstrip("/") + ".decoy")
    target = root / name.lstrip("/")
    shutil.copyfile(original, target)
    decoy.write_bytes(b"not the source's bytes\n")
    stat = original.stat()
    for path in (target, decoy):
        os.chown(path, stat.st_uid, stat.st_gid)
    try:
        wrong = server_digest(endpoint, "/" + decoy.name, env)
        os.setxattr(target, XATTR, os.getxattr(decoy, XATTR))
        mtime = decoy.stat().st_mtime_ns
        os.utime(target, ns=(mtime, mtime))
    finally:
        decoy.unlink()
    return adler32_hex(target), wrong

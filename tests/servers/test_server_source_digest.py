"""The source file carries its adler32 as XRootD stores one (source_file.py): the value is
the content's, it is stale once the file changes, and a copy made by the lab keeps it. That
XRootD serves it is checked on real servers (tests/transfers/test_transfer_checksum_xrootd.py).
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.lab.datafiles import copy_source_file
from orchestrator.servers.source_file import (
    XRDCKS_ADLER32,
    stored_adler32,
    write_source_file,
    xrdcks_adler32,
)


@pytest.fixture
def tmpfs() -> Iterator[Path]:
    """A directory on tmpfs, where the lab keeps its data (user attributes work there)."""
    with tempfile.TemporaryDirectory(dir="/dev/shm") as name:
        yield Path(name)


def test_the_written_source_carries_the_adler32_of_its_content(tmpfs: Path) -> None:
    path = tmpfs / "source"
    write_source_file(path, (3 << 20) + 5)
    assert stored_adler32(path) == zlib.adler32(path.read_bytes())
    assert os.stat(path).st_mode & 0o777 == 0o444


def test_the_attribute_is_laid_out_as_xrootd_writes_it() -> None:
    # An attribute xrootd 5.5.3 wrote for a file of mtime 1795592341 (adler32 fdacf558),
    # read back from a real server's data directory.
    written = bytes.fromhex(
        "61646c6572333200000000000000000000000000" "6b069095" "00000002" "0000" "00" "04"
        "fdacf558"
    ) + bytes(60)  # fmt: skip
    ours = xrdcks_adler32(0xFDACF558, 1795592341)
    assert len(ours) == len(written) == 96
    # the same but for csTime (seconds from the mtime to the computation; ours: 0)
    assert ours[:24] == written[:24] and ours[28:] == written[28:]


def test_a_changed_file_has_no_stored_digest_any_more(tmpfs: Path) -> None:
    path = tmpfs / "source"
    write_source_file(path, 1 << 20)
    stamp = os.stat(path).st_mtime_ns + 5 * 10**9
    os.utime(path, ns=(stamp, stamp))
    assert stored_adler32(path) is None
    assert os.getxattr(path, XRDCKS_ADLER32)  # still there, but stale: XRootD recomputes


def test_the_labs_copy_keeps_the_stored_digest(tmpfs: Path) -> None:
    path, copy = tmpfs / "source", tmpfs / "copy"
    write_source_file(path, 1 << 20)
    copy_source_file(path, copy)
    assert stored_adler32(copy) == stored_adler32(path) == zlib.adler32(copy.read_bytes())

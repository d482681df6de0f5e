"""The lab the tests share: its own home, prefix and subnet, so a user's lab is untouched.

As root the nodes are network namespaces (tpcbt-lab-N, 10.99.201-203.2); otherwise they fall
back to loopback ports from 23000. Other test areas can start their own lab the same way:
`start_lab(home, nodes, file_size, network=LabNetwork(prefix=..., subnet_offset=...))`.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ca.authority import CertificateAuthority
from orchestrator.lab import LabInventory, LabNetwork

TEST_FILE_SIZE = 16 << 20
TEST_NETWORK = LabNetwork(prefix="tpcbt", subnet_offset=200, base_port=23000)


@dataclass(frozen=True)
class RunningLab:
    home: Path
    inventory: LabInventory
    ca: CertificateAuthority


def make_home() -> Path:
    """A state directory the unprivileged server user can pass through (pytest's is 0700)."""
    home = Path(tempfile.mkdtemp(prefix="tpcbench-labtest-"))
    os.chmod(home, 0o755)
    return home

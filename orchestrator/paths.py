"""Where tpc-bench keeps its state: the CA, the lab, the spool."""

from __future__ import annotations

import os
from pathlib import Path


def tpcbench_home() -> Path:
    """`$TPCBENCH_HOME`, else /var/lib/tpc-bench for root, else ~/.local/state/tpc-bench."""
    configured = os.environ.get("TPCBENCH_HOME")
    if configured:
        return Path(configured)
    if os.geteuid() == 0:
        return Path("/var/lib/tpc-bench")
    return Path.home() / ".local" / "state" / "tpc-bench"


def default_ca_dir() -> Path:
    return tpcbench_home() / "ca"

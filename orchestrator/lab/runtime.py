"""How a lab node's servers run: as processes on this machine, or as containers of our images.

Both runtimes start the same servers from the same configuration source
(orchestrator/servers); they differ in who runs them and how `lab down` finds them again.

    runtime = make_runtime("podman")      # runtime_registry: the runtimes by name
    runtime.preflight(mode)               # one-line UserError naming what to install or build
    runtime.start_node(record, node)      # recorded in the LabRun before anything starts
    runtime.liveness(record)              # {(node, check name): "ok" | reason}
    runtime.stop(record)                  # (what was stopped, what could not be)
"""

from __future__ import annotations

from typing import Protocol

from orchestrator.lab.node_files import NodeFiles
from orchestrator.lab.preflight import ServerAccount
from orchestrator.lab.run_record import LabRun

PROCESS = "process"
PODMAN = "podman"
RUNTIMES = (PROCESS, PODMAN)


class Runtime(Protocol):
    name: str

    def preflight(self, mode: str) -> None:
        """Raise a one-line UserError if this runtime cannot run here."""
        ...

    def server_account(self) -> ServerAccount:
        """Who the servers run as: node files are owned by and readable to this account."""
        ...

    def served_data_root(self, files: NodeFiles) -> str:
        """The data root as the servers see it (GridFTP URLs carry absolute paths)."""
        ...

    def extra_ports(self) -> dict[str, int]:
        """Ports a node serves besides https, root and gridftp (the RTT probe)."""
        ...

    def start_node(self, record: LabRun, files: NodeFiles, hosts: dict[str, str]) -> None:
        """Start the node's servers; each is recorded in `record` before it starts."""
        ...

    def liveness(self, record: LabRun) -> dict[tuple[str, str], str]:
        """(node, check) -> "ok" or why not, for each server this runtime started."""
        ...

    def failure_detail(self, record: LabRun) -> str | None:
        """If a server stopped during start-up: which one and its last log line."""
        ...

    def stop(self, record: LabRun) -> tuple[list[str], list[str]]:
        """Stop everything this runtime started for `record`: (done, problems)."""
        ...

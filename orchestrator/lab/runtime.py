"""How a lab node's servers run: as processes on this machine, or as containers of our images.

Both runtimes start the same servers from the same configuration source
(orchestrator/servers); they differ in who runs them and how `lab down` finds them again.

    runtime = make_runtime("podman")
    runtime.preflight(mode)               # one-line UserError naming what to install or build
    runtime.start_node(record, node)      # recorded in the LabRun before anything starts
    runtime.liveness(record)              # {(node, check name): "ok" | reason}
    runtime.stop(record)                  # (what was stopped, what could not be)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from orchestrator.errors import UserError
from orchestrator.lab.preflight import ServerAccount
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.token_issuer import LabIssuer
from orchestrator.lab.topology import NodePlan

PROCESS = "process"
PODMAN = "podman"
RUNTIMES = (PROCESS, PODMAN)


@dataclass(frozen=True)
class NodeFiles:
    """What `lab up` prepared for one node, on this machine."""

    plan: NodePlan
    node_dir: Path  # logs, generated config, pki/ (hostcert.pem, hostkey.pem), grid-mapfile
    data_root: Path  # the node's memory-backed data directory
    certdir: Path  # the CA's grid-security directory, readable by the servers
    issuer: LabIssuer | None = None  # the lab's token issuer, whose tokens xrootd accepts
    # bench/ only: XRootD without authentication (XrootdSettings.open_access); process runtime
    open_access: bool = False

    @property
    def token_audience(self) -> str:
        """The node's own https URL, as the orchestrator names it (transfers.urls)."""
        return f"https://{self.plan.address}:{self.plan.ports['https']}"


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


def make_runtime(name: str) -> Runtime:
    if name == PROCESS:
        from orchestrator.lab.process_runtime import ProcessRuntime

        return ProcessRuntime()
    if name == PODMAN:
        from orchestrator.lab.podman_runtime import PodmanRuntime

        return PodmanRuntime()
    raise UserError(f"unknown lab runtime {name!r}; use one of: {', '.join(RUNTIMES)}")

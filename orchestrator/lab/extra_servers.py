"""More servers on a lab node, beside its own: the preliminary benchmarks' two XRootD and two
GridFTP instances that copy between two memory-backed directories on one node, and the open
servers bench/authentication.py measures the secured ones against.

They run as processes in the node's network position (its namespace), from the same
configuration source as every other server, and are recorded in the lab's run record while
they live, so `tpcbench lab down` stops them even if the run that started them was killed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.endpoints import Endpoint
from orchestrator.errors import UserError
from orchestrator.lab.datafiles import lab_data_dir
from orchestrator.lab.health import wait_until_serving
from orchestrator.lab.inventory import LabInventory, lab_dir
from orchestrator.lab.lifecycle import run_record_path
from orchestrator.lab.node_files import AccessFiles, NodeFiles, prepare_node_dir
from orchestrator.lab.process_runtime import ProcessRuntime
from orchestrator.lab.run_record import LabRun
from orchestrator.lab.topology import NodePlan


@dataclass(frozen=True)
class ExtraServer:
    """One more XRootD + GridFTP pair of ports and a data directory on a node."""

    suffix: str  # "a", "b": the instance's name is <node>-<purpose>-<suffix>
    ports: Mapping[str, int]  # https, root, gridftp
    data_ports: tuple[int, int]
    # bench/ only: XRootD without authentication, as before the servers were secured
    # (servers/xrootd.py, XrootdSettings.open_access); GridFTP is the same either way.
    open_access: bool = False


@contextmanager
def extra_servers(
    home: Path, inventory: LabInventory, node: str, purpose: str, servers: list[ExtraServer]
) -> Iterator[list[tuple[Endpoint, Path]]]:
    """Start `servers` on lab node `node`; yields (endpoint, data directory here) for each,
    and stops them (and removes their data) when the block ends."""
    endpoint = inventory.node(node)
    record_path = run_record_path(home)
    if not record_path.exists():
        raise UserError("no lab is running; start one with: tpcbench lab up --nodes 2")
    record = LabRun.load(record_path)
    runtime = ProcessRuntime()
    runtime.preflight(record.mode)
    account = runtime.server_account()
    node_pki = lab_dir(home) / "nodes" / node / "pki"
    if not (node_pki / "hostcert.pem").exists():
        # a podman lab keeps the same files: the servers here are processes either way
        raise UserError(f"lab node {node} has no host certificate in {node_pki}")
    access = AccessFiles.read(node_pki.parent)
    before = len(record.processes)
    started: list[tuple[Endpoint, Path]] = []
    data_dirs: list[str] = []
    try:
        for server in servers:
            name = f"{node}-{purpose}-{server.suffix}"
            node_dir = lab_dir(home) / "nodes" / node / f"{purpose}-{server.suffix}"
            data_root = lab_data_dir(record.network.prefix) / name
            data_dirs.append(str(data_root))
            record.data_dirs.append(str(data_root))
            record.save()
            prepare_node_dir(
                node_dir, data_root, account, node_pki / "hostcert.pem", node_pki / "hostkey.pem"
            )
            access.write(node_dir, account)
            plan = NodePlan(
                index=0,
                name=name,
                address=endpoint.address,
                ports=dict(server.ports),
                data_ports=server.data_ports,
                netns=endpoint.netns,
            )
            certdir = lab_dir(home) / "certificates"
            files = NodeFiles(plan, node_dir, data_root, certdir, open_access=server.open_access)
            runtime.start_node(record, files, {})
            served = replace(
                endpoint, name=name, ports=dict(server.ports), data_root=str(data_root)
            )
            started.append((served, data_root))
        wait_until_serving(record, runtime, [e for e, _ in started])
        yield started
    finally:
        current = LabRun.load(record_path) if record_path.exists() else record
        ours = current.processes[before:]
        record.processes = ours
        runtime.stop(record)
        current.processes = current.processes[:before]
        for folder in data_dirs:
            shutil.rmtree(folder, ignore_errors=True)
            if folder in current.data_dirs:
                current.data_dirs.remove(folder)
        if record_path.exists():
            current.save()

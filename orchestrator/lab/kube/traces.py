"""What a node's agents leave outside the node's own directories, found and removed.

containerd makes a network namespace per pod sandbox (/var/run/netns/cni-<uuid>), the CNI
library caches each attachment's result under /var/lib/cni/results, and kubelet links every
container's log into /var/log/containers. None of these paths can be moved per node, so
`lab down` removes exactly the node's own: the namespaces and cache files of its sandboxes
(asked from its containerd before it stops) and the log links that point into its directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path

from orchestrator.lab.kube.node_config import NodeLayout

NETNS_DIR = "/var/run/netns"
CNI_RESULTS = Path("/var/lib/cni/results")
CONTAINER_LOGS = Path("/var/log/containers")


def sandboxes(layout: NodeLayout) -> dict[str, str]:
    """The node's containers -> the network namespace of those that are pod sandboxes."""
    ctr = ["ctr", "--address", str(layout.containerd_socket), "--namespace", "k8s.io"]
    listed = subprocess.run([*ctr, "containers", "ls", "-q"], capture_output=True, text=True)
    found = {}
    for container in listed.stdout.split():
        found[container] = ""
        info = subprocess.run([*ctr, "containers", "info", container], capture_output=True)
        with contextlib.suppress(ValueError, KeyError, TypeError):
            for namespace in json.loads(info.stdout)["Spec"]["linux"]["namespaces"]:
                path = namespace.get("path", "")
                if namespace["type"] == "network" and path.startswith(NETNS_DIR + "/"):
                    found[container] = path.removeprefix(NETNS_DIR + "/")
    return found


def remove(layout: NodeLayout, containers: dict[str, str]) -> list[str]:
    """Remove the node's traces; returns what could not be removed."""
    problems = []
    for name in sorted({n for n in containers.values() if n}):
        if not Path(NETNS_DIR, name).exists():
            continue
        result = subprocess.run(["ip", "netns", "del", name], capture_output=True, text=True)
        if result.returncode != 0:
            problems.append(f"pod network namespace {name}: {result.stderr.strip()}")
    if CNI_RESULTS.is_dir() and containers:
        for cached in CNI_RESULTS.iterdir():
            if any(f"-{container}-" in cached.name for container in containers):
                cached.unlink(missing_ok=True)
    if CONTAINER_LOGS.is_dir():
        for link in CONTAINER_LOGS.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(str(layout.root) + "/"):
                    link.unlink()
    return problems

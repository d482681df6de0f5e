"""`tpcbench lab up --kubernetes`: the lab's network and WAN, then a real cluster on it.

The nodes are the lab's network namespaces as always (the same addresses, link caps, RTTs and
TCP settings), but no server is started by the lab: `helm install` with
charts/tpc-bench/ci/lab-values.yaml puts the chart's pods on the nodes' kubelets.

    status = start_cluster_lab(home, nodes=3, rtt="prp")   # -> cluster_status() dict
    cluster_lab_status(home); cluster_kubeconfig(home); stop_lab(home)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from orchestrator.errors import UserError
from orchestrator.lab.inventory import NO_LAB, lab_dir
from orchestrator.lab.kube.binaries import check_images, find_binaries
from orchestrator.lab.kube.cluster_lab import cluster_status, kubeconfig_path, start_cluster
from orchestrator.lab.kube.node_config import node_labels
from orchestrator.lab.lifecycle import (
    check_netns_free,
    check_no_lab_running,
    run_record_path,
    stop_lab,
)
from orchestrator.lab.network import create_network
from orchestrator.lab.preflight import check_links
from orchestrator.lab.run_record import ClusterRun, LabRun
from orchestrator.lab.topology import NETNS, LabNetwork, plan_nodes
from orchestrator.lab.wan import delay_line_status, start_wan
from orchestrator.lab.wan_profile import TcpSettings
from orchestrator.node_labels import LINK_GBPS_LABEL, SITE_LABELS
from orchestrator.paths import tpcbench_home

KUBERNETES = "kubernetes"  # the run record's runtime for a cluster lab
NOT_A_CLUSTER = "the running lab has no Kubernetes cluster (it was started without --kubernetes)"


def start_cluster_lab(
    home: Path | None = None,
    nodes: int = 3,
    *,
    rate_gbit: float | None = None,
    network: LabNetwork | None = None,
    rtt: str | None = None,
    tcp: TcpSettings | None = None,
) -> dict[str, Any]:
    """Start the lab's network and a cluster of `nodes` real kubelets; roll back on failure."""
    home = Path(home or tpcbench_home())
    if os.geteuid() != 0:
        raise UserError("--kubernetes needs root: kubelets run in the lab's network namespaces")
    network = network or LabNetwork.from_environment()
    plans = plan_nodes(nodes, NETNS, network)
    matrix = check_links(NETNS, plans, rate_gbit, rtt, tcp)
    check_no_lab_running(home)
    binaries = find_binaries()
    tags = check_images()
    check_netns_free(plans, network)

    record = LabRun(path=run_record_path(home), mode=NETNS, network=network, runtime=KUBERNETES)
    record.cluster = ClusterRun(workdir=str(lab_dir(home) / "kube"))
    record.save()
    try:
        create_network(record, plans, network, rate_gbit, tcp or TcpSettings())
        if matrix is not None:
            start_wan(record, plans, network, matrix)
        sites = matrix.sites if matrix is not None else {}
        names = (LINK_GBPS_LABEL, SITE_LABELS[0])
        labels = {p.name: node_labels(rate_gbit, sites.get(p.name), names) for p in plans}
        start_cluster(record, plans, binaries, tags, labels)
        return _status(record)
    except BaseException:
        stop_lab(home)
        raise


def _running_cluster(home: Path | None) -> LabRun:
    record_path = run_record_path(Path(home or tpcbench_home()))
    if not record_path.exists():
        raise UserError(NO_LAB)
    record = LabRun.load(record_path)
    if record.cluster is None:
        raise UserError(NOT_A_CLUSTER)
    return record


def _status(record: LabRun) -> dict[str, Any]:
    assert record.cluster is not None
    plans = plan_nodes(len(record.cluster.nodes), NETNS, record.network)
    status = cluster_status(record, plans)
    status["wan"] = {"delay_line": delay_line_status(record)} if record.delay_line else {}
    return status


def cluster_lab_status(home: Path | None = None) -> dict[str, Any]:
    """The cluster lab's control plane, nodes (kubelet state, agents) and kubeconfig."""
    return _status(_running_cluster(home))


def is_cluster_lab(home: Path | None = None) -> bool:
    record_path = run_record_path(Path(home or tpcbench_home()))
    return record_path.exists() and LabRun.load(record_path).cluster is not None


def cluster_kubeconfig(home: Path | None = None) -> Path:
    """The admin kubeconfig of the running cluster lab."""
    return kubeconfig_path(_running_cluster(home))

"""`tpcbench lab status`: what runs, read back (a table, or --json) with its verdict (exit 1
when a node, the token issuer or the WAN delay program is not well)."""

from __future__ import annotations

import argparse
import json

from orchestrator.lab import LabInventory, lab_status
from orchestrator.lab.cluster_lifecycle import cluster_lab_status, is_cluster_lab
from orchestrator.lab.sites import site_lines


def cluster_ok(status: dict) -> bool:
    nodes_ok = all(
        node["state"] == "Ready" and all(v == "ok" for k, v in node.items() if k not in NOT_AGENTS)
        for node in status["nodes"].values()
    )
    delay = status.get("wan", {}).get("delay_line", {}).get("state", "running")
    return (
        nodes_ok and all(v == "ok" for v in status["control_plane"].values()) and delay == "running"
    )


NOT_AGENTS = ("address", "state")  # a cluster lab node's other keys are its agents


def print_cluster(status: dict) -> None:
    print(f"{'NODE':<8} {'ADDRESS':<15} {'STATE':<9} AGENTS (containerd, kubelet, kube-proxy)")
    for name, node in status["nodes"].items():
        agents = ", ".join(f"{k} {v}" for k, v in node.items() if k not in NOT_AGENTS)
        print(f"{name:<8} {node['address']:<15} {node['state']:<9} {agents}")
    plane = ", ".join(f"{k} {v}" for k, v in status["control_plane"].items())
    print(f"control plane: {status['server']} ({plane})")
    print(f"kubeconfig: {status['kubeconfig']}")
    delay = status.get("wan", {}).get("delay_line")
    if delay:
        print(f"WAN delay program: {delay['state']}")


def all_ok(inventory: LabInventory) -> bool:
    """Every node healthy, the token issuer answering, and the WAN delay program (if any)
    doing its job."""
    delay = inventory.wan.get("delay_line", {}).get("state", "off")
    issuer = inventory.token_issuer.get("health", "ok")
    nodes_ok = all(h.get("ok") for h in inventory.health.values())
    return nodes_ok and issuer == "ok" and delay in ("off", "running")


def status(args: argparse.Namespace) -> int:
    if is_cluster_lab():
        status = cluster_lab_status()
        if args.json:
            print(json.dumps(cluster_json(status), indent=2))
        else:
            print_cluster(status)
        return 0 if cluster_ok(status) else 1
    inventory = lab_status()
    if args.json:
        print(json.dumps(inventory.to_json(), indent=2))
    else:
        print_table(inventory)
    return 0 if all_ok(inventory) else 1


def cluster_json(status: dict) -> dict:
    """The status shape every lab has ({"nodes": [{"name", "address", ...}]}), plus the
    cluster's control plane and kubeconfig."""
    nodes = [{"name": name, **node} for name, node in status["nodes"].items()]
    return {"runtime": "kubernetes", **status, "nodes": nodes}


def print_table(inventory: LabInventory) -> None:
    print(f"{'NODE':<8} {'ADDRESS':<15} {'HTTPS':>6} {'ROOT':>6} {'GRIDFTP':>8}  HEALTH")
    for node in [*inventory.nodes, *inventory.redirector_nodes]:  # redirectors: no GridFTP
        health = inventory.health.get(node.name, {})
        failed = {k: v for k, v in health.get("checks", {}).items() if v != "ok"}
        verdict = "ok" if health.get("ok") else "; ".join(f"{k}: {v}" for k, v in failed.items())
        ports = node.ports
        print(
            f"{node.name:<8} {node.address:<15} {ports['https']:>6} {ports['root']:>6} "
            f"{ports.get('gridftp', '-'):>8}  {verdict or 'unknown'}"
        )
    for line in site_lines(inventory.sites, inventory.redirectors):
        print(line)
    print(f"client certificate: {inventory.client.cert}")
    if inventory.profile:
        given = inventory.profile.get("given") or []
        instead = f"; given instead: {', '.join(given)}" if given else ""
        print(f"profile: {inventory.profile.get('name')}{instead} (tpcbench reproduce runs on it)")
    if inventory.token_issuer:
        issuer = inventory.token_issuer
        print(f"token issuer: {issuer.get('url')} ({issuer.get('health', 'unknown')})")
    print_wan(inventory)


def print_wan(inventory: LabInventory) -> None:
    """TCP settings per node, the delay program, and every pair's target vs measured RTT."""
    if inventory.tcp:
        print(f"\n{'NODE':<8} {'CC':<6} {'TCP_RMEM':<26} {'TCP_WMEM':<26} LINK")
        for node in inventory.nodes:
            tcp = inventory.tcp.get(node.name, {})
            link = f"{node.link_gbps:g} Gbit/s" if node.link_gbps else "uncapped"
            print(
                f"{node.name:<8} {tcp.get('tcp_congestion_control', '?'):<6} "
                f"{tcp.get('tcp_rmem', '?'):<26} {tcp.get('tcp_wmem', '?'):<26} {link}"
            )
    if inventory.wan.get("tcp_buffer_why"):
        print(f"TCP buffer maximum {inventory.wan['tcp_buffer_why']}")
    delay = inventory.wan.get("delay_line", {})
    if delay.get("state", "off") == "off":
        return
    spec = inventory.wan.get("rtt_spec")
    if delay["state"] == "running":
        print(
            f"\nWAN ({spec}): delay program running (pid {delay['pid']}, {delay['queues']} "
            f"queues, {delay['packets']} packets delayed)"
        )
    else:
        print(f"\nWAN ({spec}): {delay['state'].upper()}: {delay.get('message', '')}")
    print(f"{'PAIR':<18} {'TARGET ms':>10} {'MEASURED ms':>12}  CHECK (1 ms or 5%)")
    for node in inventory.nodes:
        for other, rtt in inventory.pair_rtts(node).items():
            measured = rtt["measured_ms"]
            shown = f"{measured:.2f}" if measured is not None else "n/a"
            verdict = {True: "ok", False: "OFF", None: "-"}[rtt["within_target"]]
            target = rtt["target_ms"]
            print(
                f"{node.name + ' -> ' + other:<18} "
                f"{(f'{target:.1f}' if target is not None else '-'):>10} {shown:>12}  {verdict}"
            )
    when = inventory.wan.get("rtt_measured_at")
    if when:
        print(f"RTTs measured {when} (TCP connect, median of 5, from each source node)")

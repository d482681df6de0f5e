"""`tpcbench lab up|status|down`: real XRootD and GridFTP servers on this machine."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from orchestrator.lab import LabInventory, LabNetwork, lab_status, start_lab, stop_lab
from orchestrator.lab.runtime import PROCESS, RUNTIMES
from orchestrator.lab.topology import MODES
from orchestrator.sizes import format_size, size_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="start, inspect or stop a lab of real XRootD/GridFTP servers",
        description="A lab of real XRootD-HTTPS and GridFTP servers on this machine.",
    )
    actions = parser.add_subparsers(dest="lab_command", metavar="ACTION")
    actions.required = True

    up = actions.add_parser("up", help="start N lab nodes")
    up.add_argument("--nodes", type=int, default=3, metavar="N", help="number of nodes (default 3)")
    up.add_argument(
        "--file-size",
        type=size_argument,
        default=1 << 30,
        metavar="SIZE",
        help="source file size (default 1GiB)",
    )
    up.add_argument(
        "--rate", type=float, default=None, metavar="GBIT", help="cap each node's link (Gbit/s)"
    )
    up.add_argument(
        "--ca", type=Path, default=None, metavar="DIR", help="CA directory ($TPCBENCH_HOME/ca)"
    )
    up.add_argument(
        "--mode",
        choices=("auto", *MODES),
        default="auto",
        help="netns (root: one namespace per node) or loopback (distinct ports); auto picks",
    )
    up.add_argument(
        "--runtime",
        choices=RUNTIMES,
        default=PROCESS,
        help="process (servers from Debian's packages on this machine) or podman (containers "
        "of our images, built with: make images); default process",
    )
    up.add_argument(
        "--base-port",
        type=int,
        default=None,
        metavar="PORT",
        help="loopback mode: first port of node 1",
    )
    up.set_defaults(func=_up)

    status = actions.add_parser("status", help="nodes, addresses, ports and health")
    status.add_argument("--json", action="store_true", help="print the inventory as JSON")
    status.set_defaults(func=_status)

    down = actions.add_parser("down", help="stop every server and remove namespaces and data")
    down.set_defaults(func=_down)


def _up(args: argparse.Namespace) -> int:
    network = LabNetwork.from_environment()
    if args.base_port is not None:
        network = replace(network, base_port=args.base_port)
    inventory = start_lab(
        nodes=args.nodes,
        file_size=args.file_size,
        ca_dir=args.ca,
        rate_gbit=args.rate,
        mode=args.mode,
        network=network,
        runtime=args.runtime,
    )
    print(
        f"lab up: {len(inventory.nodes)} nodes ({inventory.mode} mode, {inventory.runtime} "
        "runtime), "
        f"source {format_size(inventory.file_size)}"
    )
    _print_table(inventory)
    return 0 if all(h.get("ok") for h in inventory.health.values()) else 1


def _status(args: argparse.Namespace) -> int:
    inventory = lab_status()
    if args.json:
        print(json.dumps(inventory.to_json(), indent=2))
    else:
        _print_table(inventory)
    return 0 if all(h.get("ok") for h in inventory.health.values()) else 1


def _down(args: argparse.Namespace) -> int:
    done = stop_lab()
    if not done:
        print("lab down: no lab was running")
    for line in done:
        print(f"lab down: {line}")
    return 0


def _print_table(inventory: LabInventory) -> None:
    print(f"{'NODE':<8} {'ADDRESS':<15} {'HTTPS':>6} {'ROOT':>6} {'GRIDFTP':>8}  HEALTH")
    for node in inventory.nodes:
        health = inventory.health.get(node.name, {})
        failed = {k: v for k, v in health.get("checks", {}).items() if v != "ok"}
        verdict = "ok" if health.get("ok") else "; ".join(f"{k}: {v}" for k, v in failed.items())
        ports = node.ports
        print(
            f"{node.name:<8} {node.address:<15} {ports['https']:>6} {ports['root']:>6} "
            f"{ports['gridftp']:>8}  {verdict or 'unknown'}"
        )
    print(f"client certificate: {inventory.client.cert}")

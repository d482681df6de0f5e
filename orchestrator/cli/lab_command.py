"""`tpcbench lab up|status|down`: real XRootD and GridFTP servers on this machine."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from orchestrator.cli import lab_status_view as view
from orchestrator.errors import UserError
from orchestrator.lab import LabNetwork, start_lab, stop_lab
from orchestrator.lab.cluster_lifecycle import (
    cluster_kubeconfig,
    start_cluster_lab,
)
from orchestrator.lab.paper_profile import AUTO, LabChoice, choose_lab
from orchestrator.lab.paper_profile import PROFILES as LAB_PROFILES
from orchestrator.lab.runtime import PROCESS, RUNTIMES
from orchestrator.lab.sites import largest_site_rtt_ms
from orchestrator.lab.topology import MODES, node_name
from orchestrator.lab.wan_profile import (
    DEFAULT_CONGESTION_CONTROL,
    DEFAULT_TCP_BUFFER,
    PROFILES,
    TcpSettings,
    parse_rate_gbit,
    rtt_matrix,
)
from orchestrator.sizes import format_size, size_argument


def _rate(text: str) -> float:
    try:
        return parse_rate_gbit(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _buffer(text: str) -> int | str:
    return AUTO if text.strip().lower() == AUTO else size_argument(text)


def _largest_rtt_ms(spec: str, nodes: int) -> float:
    matrix = rtt_matrix(spec, [node_name(i) for i in range(1, nodes + 1)])
    return max(matrix.rtt_ms.values(), default=0.0)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="start, inspect or stop a lab of real XRootD/GridFTP servers",
        description="A lab of real XRootD-HTTPS and GridFTP servers on this machine.",
    )
    actions = parser.add_subparsers(dest="lab_command", metavar="ACTION")
    actions.required = True

    up = actions.add_parser("up", help="start N lab nodes")
    up.add_argument(
        "--profile",
        choices=tuple(LAB_PROFILES),
        default=None,
        help="a lab set up for one purpose; options given as well override its settings. "
        + "; ".join(f"{name}: {profile.summary()}" for name, profile in LAB_PROFILES.items())
        + " (docs/reproduce.md)",
    )
    up.add_argument("--nodes", type=int, metavar="N", help="number of nodes (default 3)")
    up.add_argument(
        "--sites",
        default=None,
        metavar="SITE:M,...",
        help="sites instead of nodes, e.g. ucsd:3,unl:2: hosts <site>-1..M behind one shared "
        "uplink per site, --rtt between sites (its matrix file names sites); netns only",
    )
    up.add_argument(
        "--site-link-gbit",
        type=_rate,
        default=None,
        metavar="RATE",
        help="cap each site's uplink, shared by its hosts, e.g. 1, 2.5G, 500mbit (tbf)",
    )
    up.add_argument(
        "--redirectors",
        default=None,
        metavar="regional,global",
        help="with --sites: reserve hosts for these redirector levels on the WAN (their RTTs "
        "from --rtt, whose matrix file may name them); nothing is started there yet",
    )
    up.add_argument(
        "--file-size",
        type=size_argument,
        default=None,
        metavar="SIZE",
        help="source file size (default 1GiB; a profile scales it to the link)",
    )
    up.add_argument(
        "--link-capacity",
        "--rate",  # the older name, Gbit/s
        dest="link_capacity",
        type=_rate,
        default=None,
        metavar="RATE",
        help="cap each node's link, e.g. 10gbit, 2.5G, 500mbit (tbf; a bare number is Gbit/s)",
    )
    up.add_argument(
        "--rtt",
        default=None,
        metavar="SPEC",
        help="emulate a WAN between the nodes: uniform:30ms, a profile "
        f"({', '.join(PROFILES)}), or a matrix file (YAML/CSV per ordered pair); netns only",
    )
    up.add_argument(
        "--tcp-buffer",
        type=_buffer,
        default=None,
        metavar="SIZE|auto",
        help="tcp_rmem/tcp_wmem maximum in every node; auto: 2 x the bandwidth-delay product "
        "of --link-capacity and the largest RTT of --rtt, rounded up to a power of two, at "
        f"least {format_size(DEFAULT_TCP_BUFFER)} (default: auto when both are given, else "
        f"{format_size(DEFAULT_TCP_BUFFER)})",
    )
    up.add_argument(
        "--congestion-control",
        default=None,
        metavar="CC",
        help=f"TCP congestion control in every node, e.g. bbr, cubic "
        f"(default {DEFAULT_CONGESTION_CONTROL})",
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
        "--kubernetes",
        action="store_true",
        help="a real Kubernetes cluster instead of lab servers: a control plane here, and "
        "containerd, a kubelet and kube-proxy in every node's namespace; then helm install "
        "charts/tpc-bench with its ci/lab-values.yaml (docs/lab.md)",
    )
    up.add_argument(
        "--base-port",
        type=int,
        default=None,
        metavar="PORT",
        help="loopback mode: first port of node 1",
    )
    up.set_defaults(func=_up)

    rtt = actions.add_parser(
        "rtt",
        help="print the RTT matrix an --rtt SPEC gives (nothing is started)",
        description="The target RTT of every ordered pair that `lab up --rtt SPEC` would set.",
    )
    rtt.add_argument("spec", metavar="SPEC", help="uniform:30ms, a profile, or a matrix file")
    rtt.add_argument("--nodes", type=int, default=3, metavar="N", help="number of nodes (3)")
    rtt.add_argument("--json", action="store_true", help="print the matrix as JSON")
    rtt.set_defaults(func=_rtt)

    status = actions.add_parser(
        "status", help="nodes, addresses, ports, health, TCP settings, WAN delay and pair RTTs"
    )
    status.add_argument("--json", action="store_true", help="print the inventory as JSON")
    status.set_defaults(func=view.status)

    kubeconfig = actions.add_parser(
        "kubeconfig",
        help="print the path of the cluster lab's admin kubeconfig (lab up --kubernetes)",
        description="The admin kubeconfig of the running cluster lab: "
        "export KUBECONFIG=$(tpcbench lab kubeconfig)",
    )
    kubeconfig.set_defaults(func=_kubeconfig)

    down = actions.add_parser("down", help="stop every server and remove namespaces and data")
    down.set_defaults(func=_down)


def _up(args: argparse.Namespace) -> int:
    network = LabNetwork.from_environment()
    if args.base_port is not None:
        network = replace(network, base_port=args.base_port)
    if args.sites is not None and (args.nodes is not None or args.profile or args.kubernetes):
        raise UserError("--sites gives the hosts itself: drop --nodes, --profile and --kubernetes")
    if args.profile and args.kubernetes:
        raise UserError(
            f"--profile {args.profile} is for a lab of servers (tpcbench reproduce runs on it); "
            "for a cluster give its settings: --rtt prp --link-capacity 2gbit --tcp-buffer auto"
        )
    choice = choose_lab(
        args.profile,
        nodes=args.nodes,
        rtt=args.rtt,
        link_gbit=args.link_capacity,
        tcp_buffer=args.tcp_buffer,
        file_size=args.file_size,
        largest_rtt_ms=largest_site_rtt_ms(args.sites, args.redirectors)
        if args.sites
        else _largest_rtt_ms,
        site_link_gbit=args.site_link_gbit,
    )
    tcp = _tcp_settings(args, choice)
    if args.kubernetes:
        return _up_cluster(args, choice, network, tcp)
    for line in choice.explain():
        print(f"lab up: {line}")
    if choice.rtt is not None:
        print(
            f"lab up: emulating a WAN ({choice.rtt}); the RTT of every pair is checked at the end"
        )
    inventory = start_lab(
        nodes=choice.nodes,
        file_size=choice.file_size,
        ca_dir=args.ca,
        rate_gbit=choice.link_gbit,
        mode=args.mode,
        network=network,
        runtime=args.runtime,
        rtt=choice.rtt,
        tcp=tcp,
        profile=choice.record(),
        sites=args.sites,
        site_link_gbit=args.site_link_gbit,
        redirectors=args.redirectors,
    )
    print(
        f"lab up: {len(inventory.nodes)} nodes ({inventory.mode} mode, {inventory.runtime} "
        "runtime), "
        f"source {format_size(inventory.file_size)}"
    )
    view.print_table(inventory)
    return 0 if view.all_ok(inventory) else 1


def _tcp_settings(args: argparse.Namespace, choice: LabChoice) -> TcpSettings | None:
    """The nodes' TCP settings, or None for the defaults (also when nothing was chosen)."""
    if choice.buffer.source == "default" and args.congestion_control is None:
        return None
    return TcpSettings(
        congestion_control=args.congestion_control or DEFAULT_CONGESTION_CONTROL,
        buffer_max=choice.buffer.buffer_max,
        why=choice.buffer.reason(),
    )


def _up_cluster(
    args: argparse.Namespace, choice: LabChoice, network: LabNetwork, tcp: TcpSettings | None
) -> int:
    if args.runtime != PROCESS or args.mode == "loopback" or args.ca is not None:
        raise UserError(
            "--kubernetes runs the servers as the chart's pods in netns mode; drop --runtime, "
            "--mode and --ca"
        )
    wan = f" on an emulated WAN ({choice.rtt})" if choice.rtt else ""
    print(f"lab up: starting a Kubernetes cluster of {choice.nodes} nodes{wan} (a few minutes)")
    if tcp is not None:
        print(f"lab up: TCP buffer maximum {choice.buffer.reason()}")
    status = start_cluster_lab(
        nodes=choice.nodes, rate_gbit=choice.link_gbit, network=network, rtt=choice.rtt, tcp=tcp
    )
    view.print_cluster(status)
    print(
        "next: export KUBECONFIG=$(tpcbench lab kubeconfig); helm install tpc-bench "
        "charts/tpc-bench --values charts/tpc-bench/ci/lab-values.yaml"
    )
    return 0 if view.cluster_ok(status) else 1


def _kubeconfig(args: argparse.Namespace) -> int:
    print(cluster_kubeconfig())
    return 0


def _rtt(args: argparse.Namespace) -> int:
    nodes = [node_name(i) for i in range(1, args.nodes + 1)]
    matrix = rtt_matrix(args.spec, nodes)
    if args.json:
        pairs = [{"src": a, "dst": b, "rtt_ms": rtt} for (a, b), rtt in matrix.rtt_ms.items()]
        print(json.dumps({"spec": matrix.spec, "sites": matrix.sites, "pairs": pairs}, indent=2))
        return 0
    width = max(len(n) + len(matrix.sites.get(n, "")) + 3 for n in nodes)
    labels = {n: f"{n} ({matrix.sites[n]})" if n in matrix.sites else n for n in nodes}
    print(f"RTT in ms ({matrix.spec}); rows: source, columns: destination")
    print(" " * width + "".join(f"{n:>9}" for n in nodes))
    for a in nodes:
        cells = "".join(f"{'-':>9}" if a == b else f"{matrix.target(a, b):>9.1f}" for b in nodes)
        print(f"{labels[a]:<{width}}{cells}")
    return 0


def _down(args: argparse.Namespace) -> int:
    done = stop_lab()
    if not done:
        print("lab down: no lab was running")
    for line in done:
        print(f"lab down: {line}")
    return 0

"""`tpcbench ca ...`: the CA's own actions (ca/command.py) and, on a cluster, its signer and
the servers' requests (ca_cluster_actions.py)."""

from __future__ import annotations

import argparse

from ca.command import register_actions
from orchestrator.cli.ca_cluster_actions import register_cluster_actions
from orchestrator.paths import default_ca_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ca",
        help="create a CA and issue host/client certificates",
        description="A certificate authority for the servers under test (like osg-ca-generator).",
    )
    actions = parser.add_subparsers(dest="ca_command", metavar="ACTION")
    actions.required = True
    register_actions(actions, default_dir=default_ca_dir)
    register_cluster_actions(actions)

"""Flags shared by `tpcbench campaign run` and `tpcbench orchestrator`.

Every flag defaults to None, so `load_settings` can tell a given flag (it wins) from one
left to the config file, the environment or the built-in default.
"""

from __future__ import annotations

import argparse
from typing import Any

from orchestrator.campaign.settings import PARSERS, Settings, load_settings

CAMPAIGN_FLAGS: tuple[tuple[str, str], ...] = (
    ("--protocols", "comma-separated protocols (default https,gridftp)"),
    ("--streams", "comma-separated stream counts, in order (default 8,1)"),
    ("--auth", "comma-separated authorization modes: x509, token (default x509)"),
    ("--client", "comma-separated clients driving the copies: native, gfal2 (default native)"),
    (
        "--checksum",
        "comma-separated: none (default) and/or adler32, the checksum step FTS ends each "
        "transfer with (source and destination digests asked and compared)",
    ),
    (
        "--scope",
        "host (default): every ordered pair of hosts; site: every ordered pair of sites, "
        "each copy addressed to the sites' fronts (their redirectors; GridFTP: a round-robin "
        "over the site's hosts), docs/sites.md",
    ),
    ("--transfers", "concurrent transfers per measurement, K (default 11)"),
    ("--file-size", "bytes per transfer: 1GiB, 16MiB, 1073741824 (default: the lab's, or 1GiB)"),
    ("--max-parallel-pairs", "node-disjoint measurements at once (default 1, the paper's)"),
    ("--transfer-timeout", "seconds (or 30m, 1h) before one transfer is given up (default 10m)"),
    ("--discovery", "where the nodes come from: lab or kubernetes (default lab)"),
    ("--inventory", "lab inventory file (default: the running lab's)"),
    ("--namespace", "kubernetes namespace of the server pods"),
    ("--client-cert", "client certificate for the transfers (kubernetes discovery)"),
    ("--client-key", "client key (kubernetes discovery)"),
    ("--certdir", "CA directory (kubernetes discovery)"),
    ("--report-to", "webapp URL to POST measurements to, e.g. http://127.0.0.1:8000"),
    ("--token-file", "file holding the API token (else $TPCBENCH_API_TOKEN)"),
    ("--spool-dir", "durable spool of unsent results (default $TPCBENCH_HOME/spool)"),
    ("--baseline-seconds", "how long each --baseline iperf3 test measures (default 10)"),
    ("--baseline-omit", "seconds of slow start each --baseline test leaves out first (default 2)"),
)


def add_campaign_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML settings file (default $TPCBENCH_HOME/config.toml)")
    for flag, help_text in CAMPAIGN_FLAGS:
        parser.add_argument(flag, default=None, help=help_text)
    parser.add_argument(
        "--baseline",
        action="store_const",
        const=True,
        default=None,
        help="measure each pair's link with iperf3 before its transfers, with as many streams "
        "as a measurement (transfers x streams, at most 128)",
    )
    parser.add_argument(
        "--sweep-hosts",
        action="store_const",
        const=True,
        default=None,
        help="with --scope site: after each site measurement, the scaling sweep: the same K "
        "copies spread over 1, 2, .. M host pairs of the two sites (aggregate against hosts)",
    )
    parser.add_argument(
        "--lookups",
        action="store_const",
        const=True,
        default=None,
        help="with --scope site: also time a lookup of a fresh file from every redirector "
        "level (local, regional, global) down to its data server: the hop overhead",
    )
    parser.add_argument(
        "--full-duplex",
        action="store_const",
        const=True,
        default=None,
        help="let a node send in one measurement while it receives in another (a shorter "
        "campaign, up to half; off by default: docs/orchestrator.md, 'Full duplex')",
    )


def add_cycle_fit_flag(parser: argparse.ArgumentParser) -> None:
    """The choice for a scheduled campaign longer than its cycle (`campaign plan`, the
    orchestrator)."""
    parser.add_argument(
        "--cycle-fit",
        default=None,
        help="when a scheduled campaign is longer than its cycle: rotate (default: the mesh "
        "over the fewest consecutive cycles), shorten (fewer checks per cycle) or off (the "
        "whole mesh anyway, with a warning: what has not begun by the next cycle is missed)",
    )


def given_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the user gave on the command line (argparse leaves the rest None)."""
    return {k: v for k, v in vars(args).items() if k in PARSERS and v is not None}


def settings_from_args(args: argparse.Namespace) -> Settings:
    return load_settings(given_flags(args), config_path=args.config)

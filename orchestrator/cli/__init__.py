"""The `tpcbench` command line: one module per subcommand, each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ca.authority import CAError
from orchestrator.errors import UserError

# Subcommand modules, in the order `tpcbench --help` lists them.
COMMAND_MODULES = (
    "ca",
    "lab",
    "measure",
    "lookup",
    "campaign",
    "orchestrator",
    "prelim",
    "baseline",
    "reproduce",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tpcbench",
        description="Benchmark Third-Party-Copy between grid storage servers.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(f"orchestrator.cli.{name}_command").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, CAError) as exc:  # bad input: one line, never a traceback
        print(f"tpcbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tpcbench: interrupted", file=sys.stderr)
        return 130

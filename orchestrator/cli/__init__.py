"""The `tpcbench` command line: one module per subcommand, each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from orchestrator.errors import UserError

# Subcommand modules, in the order `tpcbench --help` lists them.
COMMAND_MODULES = ("ca", "lab", "measure", "campaign", "orchestrator", "prelim", "baseline")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tpcbench",
        description="Benchmark Third-Party-Copy between grid storage servers.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        module_name = f"orchestrator.cli.{name}_command"
        if importlib.util.find_spec(module_name) is None:
            continue  # a subcommand that has not been built yet
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"tpcbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tpcbench: interrupted", file=sys.stderr)
        return 130

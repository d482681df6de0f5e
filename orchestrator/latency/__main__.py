"""The RTT's command lines.

    python -m orchestrator.latency ADDRESS PORT [--count N] [--timeout S]
prints one JSON object: {"address", "port", "samples_ms", "rtt_ms"}.

    python -m orchestrator.latency serve [--bind ADDR] [--port 9106] [--allow CIDR ...]
runs the RTT probe (orchestrator/latency/probe_server.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from orchestrator.latency.connects import CONNECT_TIMEOUT, DEFAULT_COUNT, probe
from orchestrator.latency.position import PROBE_DEFAULT_PORT
from orchestrator.latency.probe_server import MAX_CONCURRENT, parse_network, serve


def serve_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.latency serve",
        description="The RTT probe beside the servers: GET /rtt?host=H&port=P&samples=N.",
    )
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on (the node IP)")
    parser.add_argument("--port", type=int, default=PROBE_DEFAULT_PORT, help="0: any free port")
    parser.add_argument(
        "--allow",
        type=parse_network,
        action="append",
        default=[],
        metavar="CIDR",
        help="only measure targets in CIDR (repeatable; default: any target)",
    )
    parser.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT, help="per connect, s")
    parser.add_argument("--max-concurrent", type=int, default=MAX_CONCURRENT)
    args = parser.parse_args(argv)
    if not 0 < args.timeout <= 30:
        parser.error("--timeout must be in (0, 30] seconds")
    if args.max_concurrent < 1:
        parser.error("--max-concurrent must be at least 1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    serve(
        args.bind,
        args.port,
        allow=args.allow,
        timeout=args.timeout,
        max_concurrent=args.max_concurrent,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        return serve_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m orchestrator.latency", description=__doc__)
    parser.add_argument("address")
    parser.add_argument("port", type=int)
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT)
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    result = probe(args.address, args.port, args.count, args.timeout)
    print(json.dumps(result))
    return 0 if result["rtt_ms"] is not None else 1


if __name__ == "__main__":
    sys.exit(main())

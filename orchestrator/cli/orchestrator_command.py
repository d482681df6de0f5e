"""`tpcbench orchestrator`: the long-running scheduler service."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from orchestrator.cli.campaign_options import (
    add_campaign_flags,
    add_cycle_fit_flag,
    settings_from_args,
)
from orchestrator.service.daemon import OrchestratorService


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "orchestrator",
        help="run campaigns on a schedule and on request (a long-running service)",
        description="Starts a campaign on a cron schedule (default twice a day) and whenever "
        "the webapp holds a pending 'run now' campaign; never two at once. Serves /healthz and "
        "Prometheus /metrics. Settings: flags > TPCBENCH_* environment > config file.",
    )
    add_campaign_flags(parser)
    service = parser.add_argument_group("service")
    service.add_argument(
        "--schedule", default=None, help="cron expression (default '0 0,12 * * *')"
    )
    service.add_argument("--slip", default=None, help="random delay after each time, e.g. 30m")
    add_cycle_fit_flag(service)
    service.add_argument("--poll-interval", default=None, help="webapp poll period (default 30s)")
    service.add_argument("--stop-grace", default=None, help="SIGTERM grace for measurements (25s)")
    service.add_argument("--metrics-bind", default=None, help="address (default 127.0.0.1)")
    service.add_argument("--metrics-port", default=None, help="port (default 9105; 0: any free)")
    service.add_argument(
        "--run-on-start",
        action="store_const",
        const=True,
        default=None,
        help="start one campaign right away, then follow the schedule",
    )
    service.add_argument("--once", action="store_true", help="one decision, then exit (tests)")
    parser.set_defaults(func=orchestrator)


def orchestrator(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    settings = settings_from_args(args)
    service = OrchestratorService(settings)
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        logging.getLogger(__name__).info("signal %d: finishing up", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server = service.serve_metrics()
    print(
        f"tpcbench orchestrator: /metrics and /healthz on "
        f"http://{settings.metrics_bind}:{server.port}; next campaign "
        f"{service.schedule.next_at.isoformat()}",
        file=sys.stderr,
        flush=True,
    )
    try:
        service.run(once=args.once, stop=stop)
    finally:
        server.close()
    logging.getLogger(__name__).info("stopped cleanly")
    return 0

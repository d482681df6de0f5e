"""Install a given API token (e.g. from a Kubernetes Secret) for a reporter; idempotent."""

import os

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.results.api.permissions import api_token_ensure


class Command(BaseCommand):
    help = "Make --token (default: $TPCBENCH_API_TOKEN) the API token of reporter NAME."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="reporter name, e.g. orchestrator")
        parser.add_argument(
            "--token",
            default=os.environ.get("TPCBENCH_API_TOKEN", ""),
            help="the token (default: environment TPCBENCH_API_TOKEN)",
        )

    def handle(self, *args, name: str, token: str, **options) -> None:
        if not token:
            raise CommandError("no token: pass --token or set TPCBENCH_API_TOKEN")
        try:
            changed = api_token_ensure(name=name, key=token)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"API token for {name} {'installed' if changed else 'already in place'}")

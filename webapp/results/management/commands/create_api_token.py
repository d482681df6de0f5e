"""Create an API token for a reporter (orchestrator, script); the token is the last word."""

from django.core.management.base import BaseCommand, CommandParser

from webapp.results.api.permissions import api_token_create


class Command(BaseCommand):
    help = "Create a new API token for NAME (replacing NAME's earlier token) and print it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="reporter name, e.g. orchestrator")

    def handle(self, *args, name: str, **options) -> None:
        key = api_token_create(name=name)
        self.stdout.write(f"API token for {name}: {key}")

"""The reads the demo's SQLite and PostgreSQL must answer alike (test_demo_database_reads).

Run as a script, it migrates the database DATABASE_URL names (the demo's SQLite), stores
the measurements of a JSON file through the API, and writes every read's answer to another:
    python -m tests.support.demo_reads PAYLOADS.json ANSWERS.json
"""

import json
import re
import sys

# Grids, rows, cells, checks, aggregates: everything that reads through the grid and the
# selectors, over the latest campaign and over a time window.
JSON_READS = [
    "/maddash/grids/",
    "/maddash/grids/https",
    "/maddash/grids/https?window=24h",
    "/maddash/grids/gridftp?window=24h",
    "/maddash/grids/https/a?window=24h",
    "/maddash/grids/https/c/a",
    "/maddash/grids/https/c/a/8+streams",
    "/api/v1/throughput-vs-latency/?window=24h",
    "/api/v1/throughput-vs-latency/?window=latest&protocol=https&streams=8",
    "/api/v1/stream-comparison/?protocol=https&window=24h",
    "/api/v1/stream-comparison/?protocol=gridftp&window=latest",
]
PAGES = ["/?window=latest", "/?window=24h", "/plots/latency/", "/plots/streams/", "/pairs/a/b/"]
# What a grid page shows of the data: when it was updated, the campaign, and the tables.
_SHOWN = re.compile(r'<p class="updated">.*?</p>|<table class="grid".*?</table>', re.DOTALL)


def store(client, payloads: list[dict], campaign: str) -> None:
    """POST the measurements (one bulk list), then finish their campaign."""
    response = client.post("/api/v1/measurements/", payloads, format="json")
    assert response.status_code == 201, response.content
    finished = client.patch(f"/api/v1/campaigns/{campaign}/", {"state": "finished"}, format="json")
    assert finished.status_code == 200, finished.content


def rounded(value):
    """Floats to 9 digits, anywhere in a JSON value: sums may differ in their last bit."""
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def answers(client) -> dict:
    """Every read's answer: JSON rounded, and what the grid pages show of the data."""
    found = {}
    for url in JSON_READS:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        found[url] = rounded(response.json())
    for url in PAGES:
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        found[url] = _SHOWN.findall(response.content.decode())
    return found


def main(payloads_path: str, answers_path: str) -> None:
    import django
    from django.conf import settings

    # As the test suite serves pages: static files by name, no collectstatic manifest.
    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    settings.STORAGES = {**settings.STORAGES, "staticfiles": plain}
    settings.WHITENOISE_USE_FINDERS = settings.WHITENOISE_AUTOREFRESH = True
    django.setup()
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from webapp.results.api.permissions import api_token_create

    call_command("migrate", verbosity=0)
    with open(payloads_path) as source:
        given = json.load(source)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(name='demo')}")
    store(client, given["payloads"], given["campaign"])
    with open(answers_path, "w") as target:
        json.dump(answers(APIClient()), target)


if __name__ == "__main__":
    main(*sys.argv[1:])

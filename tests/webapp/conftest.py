"""Fixtures of the web app tests (PostgreSQL via webapp.tpcbench_web.settings_test)."""

import uuid as uuid_lib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.results.api.permissions import api_token_create

GIB = 2**30


def payload(
    *,
    src: str = "node-a",
    dst: str = "node-b",
    protocol: str = "https",
    streams: int = 8,
    k: int = 11,
    seconds: float = 8.0,
    failed: int = 0,
    started: datetime | None = None,
    campaign: str | None = None,
    rtt_ms: float | None = 12.5,
    error_class: str = "timeout",
    file_size: int = GIB,
    auth: str | None = None,
    client: str | None = None,
    phases: bool = False,
) -> dict:
    """A JSON-ready measurement as the orchestrator sends it; every transfer lasts `seconds`.

    `auth`, `client`: sent when given (older orchestrators sent neither); `phases`: each
    transfer with its phases (a tenth of it setup) and streaming rate, as the orchestrator
    sends them now."""
    started = started or timezone.now() - timedelta(hours=1)
    transfers = []
    for index in range(k):
        ok = index >= failed
        transfers.append(
            {
                "index": index,
                "start": (started + timedelta(seconds=0.1 * index)).isoformat(),
                "end": (started + timedelta(seconds=0.1 * index + seconds)).isoformat(),
                "bytes": file_size if ok else 0,
                "outcome": "success" if ok else "failure",
                "error_class": None if ok else error_class,
                "message": "" if ok else f"{error_class} talking to {dst}",
            }
        )
        if phases:
            setup = seconds / 10
            transfers[-1]["phases"] = (
                {"connect": setup / 2, "handshake": setup / 4, "request": setup / 4}
                | {"streaming": seconds - setup}
                if ok
                else {"connect": seconds}
            )
            transfers[-1]["streaming_gbps"] = (
                file_size * 8 / (seconds - setup) / 1e9 if ok else None
            )
    dimensions = {"auth": auth, "client": client}
    return {
        **{name: value for name, value in dimensions.items() if value is not None},
        "uuid": str(uuid_lib.uuid4()),
        "campaign": campaign,
        "src": src,
        "dst": dst,
        "protocol": protocol,
        "streams": streams,
        "file_size": file_size,
        "rtt_ms": rtt_ms,
        "started": started.isoformat(),
        "finished": (started + timedelta(seconds=0.1 * (k - 1) + seconds)).isoformat(),
        # Deliberately wrong: the server must recompute these.
        "throughput_gbps": 999.0,
        "makespan_gbps": 999.0,
        "succeeded": 0,
        "failed": 0,
        "transfers": transfers,
    }


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test's database starts from the same data version: cached answers must not leak."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def make_payload() -> Callable[..., dict]:
    return payload


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


@pytest.fixture
def reporter_token(db) -> str:
    return api_token_create(name="orchestrator")


@pytest.fixture
def reporter(reporter_token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {reporter_token}")
    return client


@pytest.fixture
def ingest(reporter: APIClient) -> Callable[..., dict]:
    """POST a payload built from keyword arguments; returns the payload (asserts 201)."""

    def post(**kwargs) -> dict:
        body = payload(**kwargs)
        response = reporter.post("/api/v1/measurements/", body, format="json")
        assert response.status_code == 201, response.content
        return body

    return post


@pytest.fixture
def store(ingest):
    """`ingest` (a real POST to the API), given a throughput in Gbps."""

    def post(*, gbps: float, transfers: int = 3, failed: int = 0, campaign=None, **kwargs) -> dict:
        ok = transfers - failed
        seconds = ok * GIB * 8 / (gbps * 1e9) if ok else 60.0
        return ingest(
            k=transfers,
            seconds=seconds,
            failed=failed,
            campaign=str(campaign) if campaign else None,
            **kwargs,
        )

    return post


# Debian's Chromium, never a browser downloaded by Playwright (the machines have no internet).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium() -> Iterator:
    """A headless Chromium driven by Playwright; do database work before asking for it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()

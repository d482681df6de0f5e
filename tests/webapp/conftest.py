"""Fixtures of the web app tests (PostgreSQL via webapp.tpcbench_web.settings_test)."""

from collections.abc import Callable, Iterator

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.support.webapp_payloads import payload
from webapp.results.api.permissions import api_token_create

GIB = 2**30


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


@pytest.fixture
def checksum_payload() -> Callable[..., dict]:
    """A payload (webapp_payloads.payload, with phases) of a measurement whose transfers
    ended with the checksum step, as the orchestrator sends one with --checksum adler32:
    `checksum_s` of each successful transfer's streaming is its `checksum` phase. With
    error_class="checksum-mismatch" the failed ones copied everything and then compared
    differing digests."""

    def build(*, checksum: str = "adler32", checksum_s: float = 0.4, **kwargs) -> dict:
        body = payload(phases=True, **kwargs)
        body["checksum"] = checksum
        mismatch = kwargs.get("error_class") == "checksum-mismatch"
        file_size, seconds = body["file_size"], kwargs.get("seconds", 8.0)
        for transfer in body["transfers"]:
            if transfer["outcome"] == "failure" and mismatch:
                setup = seconds / 10
                transfer["bytes"] = file_size
                transfer["phases"] = {"connect": setup, "streaming": seconds - setup}
            phases = transfer["phases"]
            if "streaming" in phases:
                phases["streaming"] -= checksum_s
                phases["checksum"] = checksum_s
                transfer["streaming_gbps"] = file_size * 8 / phases["streaming"] / 1e9
        return body

    return build


@pytest.fixture
def ingest_checksum(reporter: APIClient, checksum_payload) -> Callable[..., dict]:
    """POST a checksum_payload built from keyword arguments; returns it (asserts 201)."""

    def post(**kwargs) -> dict:
        body = checksum_payload(**kwargs)
        response = reporter.post("/api/v1/measurements/", body, format="json")
        assert response.status_code == 201, response.content
        return body

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


@pytest.fixture
def site_payload() -> Callable[..., dict]:
    """A payload (webapp_payloads.payload, with phases) of a measurement between sites
    (issue 23): `src_site`/`dst_site` and `scope` as sent, and each successful transfer
    served by data server `<site>-<i>:1094` of each end after `redirects` redirects, the
    first `redirect_s` of its connect phase spent in the phase `redirect`."""

    def build(
        *,
        src_site: str = "ucsd",
        dst_site: str = "unl",
        scope: str = "host",
        redirects: int = 1,
        redirect_s: float = 0.05,
        **kwargs,
    ) -> dict:
        body = payload(phases=True, **kwargs)
        body.update(scope=scope, src_site=src_site, dst_site=dst_site)
        for i, transfer in enumerate(body["transfers"]):
            phases = transfer["phases"]
            if transfer["outcome"] != "success":
                continue
            phases["connect"] -= redirect_s
            phases["redirect"] = redirect_s
            transfer["source_server"] = f"{src_site}-{1 + i % 2}:1094"
            transfer["destination_server"] = f"{dst_site}-{1 + i % 2}:1094"
            transfer["redirects"] = redirects
        return body

    return build

"""Reporting that loses nothing: spool first, then POST; re-send with backoff until acknowledged.

Every measurement is written to the durable spool before the first network byte. It leaves
the spool only when the webapp answers 200 (a replay of a uuid it already has) or 201
(created); the webapp's idempotency on uuid makes every re-send harmless. Connection
errors, timeouts and 5xx keep it in the spool for the background re-sender (exponential
backoff, capped, jittered). A refusal (4xx, including 409: the uuid exists with different
content) moves it to `rejected/` with the server's answer — never silently dropped.
401/403/408/429 are not the measurement's fault (a wrong token, an overloaded server), so
those are retried like a 5xx rather than rejected.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from orchestrator.errors import UserError
from orchestrator.report.spool import Spool, SpoolItem

log = logging.getLogger(__name__)

Outcome = Literal["sent", "spooled", "rejected"]
RETRYABLE_CLIENT_ERRORS = frozenset({401, 403, 408, 429})
TOKEN_ENV = "TPCBENCH_API_TOKEN"
FINAL_CAMPAIGN_STATES = frozenset({"finished", "interrupted", "failed"})


def backoff_delay(
    attempt: int, *, initial: float = 1.0, cap: float = 300.0, rng: random.Random | None = None
) -> float:
    """Seconds to wait before retry number `attempt` (0-based): doubling, capped, and
    jittered into [d/2, d] so many orchestrators do not retry in lock-step."""
    delay = min(cap, initial * 2 ** min(attempt, 62))
    return delay * (0.5 + 0.5 * (rng or random).random())


def load_token(token_file: str | Path | None = None) -> str | None:
    """The API token: `--token-file` if given, else $TPCBENCH_API_TOKEN, else none."""
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UserError(f"cannot read the token file {token_file}: {exc.strerror}") from exc
        if not token:
            raise UserError(f"the token file {token_file} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


@dataclass
class DrainResult:
    sent: int = 0
    rejected: int = 0
    failed: int = 0  # still in the spool, to be retried

    @property
    def complete(self) -> bool:
        return self.failed == 0


# Where each kind of result is POSTed.
POST_PATHS = {
    "measurement": "/api/v1/measurements/",
    "baseline": "/api/v1/baselines/",
    "prelim": "/api/v1/prelim-runs/",
    "lookup": "/api/v1/lookups/",  # a redirector lookup (measurement/lookup.py)
}


class Reporter:
    """Sends measurements and campaign states to the webapp through the spool.

    Without a URL everything stays in the spool (a later run with `--report-to` sends it).
    """

    def __init__(
        self,
        spool: Spool,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        backoff_initial: float = 1.0,
        backoff_cap: float = 300.0,
        idle_poll: float = 60.0,
        on_result: Callable[[SpoolItem, Outcome], None] | None = None,
    ) -> None:
        self.spool = spool
        self.url = url.rstrip("/") if url else None
        self.backoff_initial = backoff_initial
        self.backoff_cap = backoff_cap
        self.idle_poll = idle_poll
        self.on_result = on_result
        headers = {"Authorization": f"Token {token}"} if token else {}
        self._client = httpx.Client(headers=headers, timeout=timeout) if self.url else None
        self._send_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None

    # -- the public face -------------------------------------------------------------------

    def report(self, measurement: dict[str, Any]) -> Outcome:
        """Spool `measurement` durably, then try to send it once right now."""
        item = self.spool.put(measurement)
        return self._try_now(item)

    def report_result(self, kind: str, result: dict[str, Any]) -> Outcome:
        """Spool a link baseline ("baseline") or a preliminary run ("prelim"), then send it."""
        item = self.spool.put_result(kind, result)
        return self._try_now(item)

    def report_campaign(self, campaign_uuid: str, state: dict[str, Any]) -> Outcome:
        """Record the campaign's latest state (running/finished/interrupted/...) and send it."""
        with self._send_lock:  # never replace the file while a sender holds the older state
            item = self.spool.put_campaign(campaign_uuid, {"uuid": campaign_uuid, **state})
        return self._try_now(item)

    def drain(self, deadline: float | None = None) -> DrainResult:
        """One pass over the spool: send everything that is waiting (until the monotonic
        `deadline`, if given: what is left simply stays spooled)."""
        result = DrainResult()
        if self._client is None:
            result.failed = len(self.spool.pending())
            return result
        for item in self.spool.pending():
            if deadline is not None and time.monotonic() >= deadline:
                result.failed += 1
                continue
            outcome = self._send(item)
            if outcome == "sent":
                result.sent += 1
            elif outcome == "rejected":
                result.rejected += 1
            else:
                result.failed += 1
        return result

    def api_get(self, path: str, params: dict[str, str] | None = None) -> Any:
        """GET a JSON document from the webapp with the same token (raises on failure)."""
        if self._client is None or self.url is None:
            raise RuntimeError("no webapp URL configured")
        response = self._client.get(f"{self.url}{path}", params=params)
        response.raise_for_status()
        return response.json()

    # -- background re-sender (rucio daemon shape) ---------------------------------------

    def run(self, once: bool = False, stop: threading.Event | None = None) -> None:
        """Drain the spool until `stop`; back off exponentially while the webapp is away."""
        stop = stop or self._stop
        attempt = 0
        while not stop.is_set():
            result = self.drain()
            if once:
                return
            if result.complete:
                attempt = 0
                delay = self.idle_poll
            else:
                delay = backoff_delay(attempt, initial=self.backoff_initial, cap=self.backoff_cap)
                attempt += 1
                log.info("%d result(s) unsent; retrying in %.1f s", result.failed, delay)
            self._wake.wait(delay)
            self._wake.clear()

    def start(self) -> None:
        """Start the background re-sender thread (idempotent)."""
        if self._client is None or (self._thread and self._thread.is_alive()):
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="spool-resender", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def close(self, flush_timeout: float | None = 0.0) -> DrainResult | None:
        """Stop the re-sender; with a flush timeout > 0, try one last drain first."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        result = None
        if flush_timeout and self._client is not None:
            result = self.drain(deadline=time.monotonic() + flush_timeout)
        if self._client is not None:
            self._client.close()
        return result

    # -- one item ------------------------------------------------------------------------

    def _try_now(self, item: SpoolItem) -> Outcome:
        if self._client is None:
            return "spooled"
        outcome = self._send(item)
        if outcome == "spooled":
            self.wake()
        return outcome

    def _send(self, item: SpoolItem) -> Outcome:
        assert self._client is not None
        with self._send_lock:
            if not item.path.exists():
                return "sent"  # another thread sent it meanwhile
            try:
                payload = item.load()
                response = self._request(item, payload)
            except (httpx.HTTPError, OSError) as exc:
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.debug("sending %s %s failed: %s", item.kind, item.uuid, self.last_error)
                return self._done(item, "spooled")
            status = response.status_code
            if status in (200, 201, 204):
                self.spool.acknowledge(item)
                self.last_error = None
                return self._done(item, "sent")
            if (
                status == 404
                and item.kind == "campaign"
                and not self._campaign_unknown(item, payload)
            ):
                self.last_error = "campaign not yet known to the webapp"
                return self._done(item, "spooled")
            if 400 <= status < 500 and status not in RETRYABLE_CLIENT_ERRORS:
                self.spool.reject(item, status, response.text)
                log.warning(
                    "webapp rejected %s %s: %s %s",
                    item.kind,
                    item.uuid,
                    status,
                    response.text[:500],
                )
                return self._done(item, "rejected")
            self.last_error = f"HTTP {status}: {response.text[:200]}"
            return self._done(item, "spooled")

    def _request(self, item: SpoolItem, payload: dict[str, Any]) -> httpx.Response:
        assert self._client is not None and self.url is not None
        if item.kind == "campaign":
            return self._client.patch(f"{self.url}/api/v1/campaigns/{item.uuid}/", json=payload)
        return self._client.post(f"{self.url}{POST_PATHS[item.kind]}", json=payload)

    def _campaign_unknown(self, item: SpoolItem, payload: dict[str, Any]) -> bool:
        """404 on a campaign PATCH: the webapp creates a campaign from its first measurement,
        so wait while any of its measurements are still spooled, and while it is still
        running (a later state replaces this one). A final state of a campaign without a
        single measurement is kept for a human in rejected/."""
        if payload.get("state") not in FINAL_CAMPAIGN_STATES:
            return False
        for other in self.spool.pending():
            if other.kind != "campaign":
                try:
                    if other.load().get("campaign") == item.uuid:
                        return False
                except (OSError, ValueError):
                    continue
        return True

    def _done(self, item: SpoolItem, outcome: Outcome) -> Outcome:
        if self.on_result is not None:
            self.on_result(item, outcome)
        return outcome

"""HTTP-TPC: a WebDAV COPY sent to one server, which copies from or to the other by itself."""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import httpx

from ca.tokens import TokenError
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.base import (
    Auth,
    TransferObservation,
    TransferRequest,
    TransferTool,
)
from orchestrator.transfers.checksums import (
    ChecksumStepError,
    compare_digests,
    digest_from_header,
)
from orchestrator.transfers.error_classes import classify_http_status, classify_message
from orchestrator.transfers.macaroons import DOWNLOAD, UPLOAD, MacaroonError, request_macaroon
from orchestrator.transfers.perf_markers import PerfMarkerParser
from orchestrator.transfers.phases import PhaseTimeline
from orchestrator.transfers.record import Clock, ErrorClass, TransferRecord
from orchestrator.transfers.token_headers import (
    copy_token_headers,
    delete_token_header,
    digest_token_headers,
)
from orchestrator.transfers.urls import https_url

Mode = Literal["pull", "push"]
# How an x509 copy authorizes the server-to-server leg: a macaroon from the other server, or
# nothing (for bench/ only: against servers that check nothing, what authentication costs).
OtherLeg = Literal["macaroon", "anonymous"]
# Connection setup gets its own bound so a dead host is "connect", not a 10-minute "timeout".
CONNECT_TIMEOUT = 30.0
# A redirector answers a COPY with one of these and a Location: the data server to ask.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5  # local, regional, global redirectors and back down, with room to spare
# XRootD 5.5's HTTP-TPC handler at a manager answers the first COPY to a name it has not yet
# looked up with 400 "Failed to open local resource" instead of waiting for its lookup; a
# client that asks again after the manager's lookup delay (cms.delay lookup, 1 s in our
# configuration) is redirected (tests/servers/test_server_redirector.py). Only for a
# redirector, and counted in the redirect phase.
LOOKUP_RETRIES = 3
LOOKUP_RETRY_DELAY = 1.0
_LOOKING_UP = "Failed to open local resource"


def client_ssl_context(creds: ClientCredentials, auth: Auth = "x509") -> ssl.SSLContext:
    """TLS verified against our CA directory (never disabled), presenting the client cert
    for x509 (with tokens, none: the token alone must authorize).

    Built once per set of files (loading them costs more than a small transfer's handshake);
    a renewed certificate or CA directory changes the key, so a long-running orchestrator
    picks it up without a restart.
    """
    files = (creds.cert, creds.key, creds.certdir) if auth == "x509" else (creds.certdir,)
    stamp = tuple(os.stat(p).st_mtime_ns for p in files)
    return _ssl_context(creds, auth, stamp)


@functools.lru_cache(maxsize=8)
def _ssl_context(creds: ClientCredentials, auth: Auth, stamp: tuple[int, ...]) -> ssl.SSLContext:
    context = ssl.create_default_context(capath=str(creds.certdir))
    if auth == "x509":
        context.load_cert_chain(str(creds.cert), str(creds.key))
    return context


def tpc_headers(
    source_url: str | None, destination_url: str | None, streams: int
) -> dict[str, str]:
    """The COPY headers, cased exactly: XRootD 5.5 compares header names case-sensitively."""
    if source_url is not None:
        # Pull: the destination server GETs the source; only pull honours the stream count.
        return {"Source": source_url, "X-Number-Of-Streams": str(streams), "Overwrite": "T"}
    assert destination_url is not None
    return {"Destination": destination_url, "Overwrite": "T"}


def phase_trace(
    timeline: PhaseTimeline, clock: Clock, response_at: list[float]
) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    """An httpx `trace` hook that stamps the phases of the COPY's connection.

    `response_at` gets the moment the response headers arrived: whether the copy started
    depends on their status, which the caller learns only afterwards.
    """

    async def trace(event: str, info: dict[str, Any]) -> None:
        now = clock.now()
        if event == "connection.start_tls.started":
            timeline.enter("handshake", now)
        elif event.endswith(".send_request_headers.started"):
            timeline.enter("request", now)
        elif event.endswith(".receive_response_headers.complete"):
            response_at.append(now)

    return trace


class HttpsTpc(TransferTool):
    """HTTP-TPC in pull mode (COPY to the destination with `Source:`) or push mode.

    `other_leg="anonymous"` (bench/authentication.py only) skips the macaroon of an x509
    copy: the copy's other leg then works only against servers that check nothing.
    """

    name = "https"
    auths: tuple[str, ...] = ("x509", "token")

    def __init__(self, mode: Mode = "pull", other_leg: OtherLeg = "macaroon") -> None:
        if mode not in ("pull", "push"):
            raise ValueError(f"mode must be pull or push, not {mode!r}")
        if other_leg not in ("macaroon", "anonymous"):
            raise ValueError(f"other_leg must be macaroon or anonymous, not {other_leg!r}")
        self.mode = mode
        self.other_leg = other_leg

    async def copy(self, request: TransferRequest) -> TransferRecord:
        source_url, destination_url = (
            https_url(request.src, request.src_path),
            https_url(request.dst, request.dst_path),
        )
        if self.mode == "pull":
            target, headers = destination_url, tpc_headers(source_url, None, request.streams)
            other_leg = (source_url, DOWNLOAD)
        else:
            target, headers = source_url, tpc_headers(None, destination_url, request.streams)
            other_leg = (destination_url, UPLOAD)
        # Tokens are minted before the clock starts: signing is ours, not the transfer's.
        tokens: dict[str, str] | TokenError = {}
        digest_tokens: tuple[dict[str, str], dict[str, str]] = ({}, {})
        if request.auth == "token":
            try:
                tokens = copy_token_headers(request, pull=self.mode == "pull")
                if request.checksum != "none":
                    digest_tokens = digest_token_headers(request)
            except TokenError as exc:
                tokens = exc
        # x509: the copy begins with the macaroon for the other leg (_authorize_other_leg)
        authorize = request.auth == "x509" and self.other_leg == "macaroon"
        seen = TransferObservation.begin(
            request,
            self.name,
            source_url,
            destination_url,
            first_phase="authorize" if authorize else "connect",
        )
        parser = PerfMarkerParser()
        succeeded, error_class, message = False, None, ""
        try:
            if isinstance(tokens, TokenError):
                raise tokens
            headers = {**headers, **tokens}
            async with asyncio.timeout(request.timeout):
                if authorize:
                    headers = await self._authorize_other_leg(seen, other_leg, headers)
                succeeded, error_class, message = await self._copy(seen, target, headers, parser)
                if succeeded and request.checksum != "none":
                    await self._verify_checksum(seen, digest_tokens)
        except ChecksumStepError as exc:
            succeeded, error_class, message = False, exc.error_class, str(exc)
        except TimeoutError:
            error_class, message = "timeout", f"no verdict within the {request.timeout:g} s timeout"
        except httpx.ConnectTimeout as exc:
            error_class, message = "connect", f"connect to {target} timed out: {exc}"
        except httpx.ConnectError as exc:
            text = str(exc)
            error_class = "tls" if classify_message(text) == "tls" else "connect"
            message = f"{target}: {text}"
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            # The server went away in the middle of the COPY (e.g. it was killed).
            error_class, message = "killed", f"connection lost: {exc or type(exc).__name__}"
        except httpx.HTTPError as exc:
            error_class, message = classify_message(str(exc)), f"{type(exc).__name__}: {exc}"
        except ssl.SSLError as exc:
            error_class, message = "tls", str(exc)
        except OSError as exc:  # our own client certificate or key could not be read
            error_class, message = "auth", f"client credentials: {exc}"
        except TokenError as exc:  # no token issuer, or its key could not be read
            error_class, message = "auth", f"tokens: {exc}"
        except MacaroonError as exc:
            error_class, message = "auth", str(exc)
        return seen.record(
            succeeded, error_class=error_class, message=message, moved=parser.total_bytes
        )

    async def _authorize_other_leg(
        self, seen: TransferObservation, other_leg: tuple[str, str], headers: dict[str, str]
    ) -> dict[str, str]:
        """x509: a macaroon from the other server (macaroons.py) for its leg, timed as the
        transfer's `authorize` phase; the COPY's own connection starts afterwards."""
        url, activity = other_leg
        request = seen.request
        async with httpx.AsyncClient(
            verify=client_ssl_context(request.creds, "x509"),
            timeout=httpx.Timeout(CONNECT_TIMEOUT),
        ) as client:
            macaroon = await request_macaroon(client, url, activity, request.timeout)
        seen.timeline.enter("connect", request.clock.now())
        return {**headers, "TransferHeaderAuthorization": f"Bearer {macaroon}"}

    async def _verify_checksum(
        self, seen: TransferObservation, digest_tokens: tuple[dict[str, str], dict[str, str]]
    ) -> None:
        """The checksum step (checksums.py): RFC 3230 digests by `HEAD` with `Want-Digest`,
        of the source and then of the destination, compared; timed as `checksum`. A site's
        front (a redirector) sends the HEAD on to the data server that has the file."""
        request = seen.request
        seen.timeline.enter("checksum", request.clock.now())
        async with httpx.AsyncClient(
            verify=client_ssl_context(request.creds, request.auth),
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),
            follow_redirects=request.src.redirector or request.dst.redirector,
            max_redirects=MAX_REDIRECTS,
        ) as client:
            source, destination = [
                await https_digest(client, url, request.checksum, headers)
                for url, headers in zip(
                    (seen.source_url, seen.destination_url), digest_tokens, strict=True
                )
            ]
        compare_digests(request.checksum, source, destination)

    async def _copy(
        self,
        seen: TransferObservation,
        target: str,
        headers: dict[str, str],
        parser: PerfMarkerParser,
    ) -> tuple[bool, ErrorClass | None, str]:
        request, timeline, clock = seen.request, seen.timeline, seen.request.clock
        response_at: list[float] = []
        trace = phase_trace(timeline, clock, response_at)
        asked = request.dst if self.mode == "pull" else request.src
        retries = LOOKUP_RETRIES if asked.redirector else 0
        async with httpx.AsyncClient(
            verify=client_ssl_context(request.creds, request.auth),
            timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT),
        ) as client:
            while True:
                async with client.stream(
                    "COPY", target, headers=headers, extensions={"trace": trace}
                ) as response:
                    location = response.headers.get("Location")
                    redirected = (
                        response.status_code in REDIRECT_STATUSES
                        and location
                        and seen.redirects < MAX_REDIRECTS
                    )
                    if not redirected and not (retries and await _still_looking(response)):
                        await self._read_copy(seen, response, response_at, parser)
                        break
                if redirected:
                    # A redirector sent the COPY on: its hops are the `redirect` phase, the
                    # data server it named gets the COPY (and serves this end).
                    timeline.redirected(clock.now())
                    seen.redirects += 1
                    target = str(response.url.join(location))
                else:  # the redirector is still looking the name up: ask it again
                    retries -= 1
                    await asyncio.sleep(LOOKUP_RETRY_DELAY)
                    timeline.redirected(clock.now())
        self._note_servers(seen, target, parser)
        if response.status_code >= 300:
            detail = parser.last_line or response.reason_phrase
            return (
                False,
                classify_http_status(response.status_code, detail),
                (f"COPY answered {response.status_code}: {detail}"),
            )
        verdict = parser.verdict
        if verdict is None:
            return (
                False,
                "remote-failure",
                f"COPY body ended without a verdict: {parser.last_line!r}",
            )
        succeeded, text = verdict
        if succeeded:
            return True, None, text
        return False, classify_message(text), text

    def _note_servers(
        self, seen: TransferObservation, target: str, parser: PerfMarkerParser
    ) -> None:
        """Through redirectors, which data server served each end: the one that took the
        COPY (its URL after the redirects) and the one it copied with (the perf markers'
        remote connection). Host to host, neither is noted: each end is the one addressed."""
        other = seen.request.src if self.mode == "pull" else seen.request.dst
        there = parser.remote_connections[0] if parser.remote_connections else None
        if seen.redirects == 0 and (there is None or there.rpartition(":")[0] == other.address):
            return
        took = httpx.URL(target)
        here = f"{took.host}:{took.port}"
        if self.mode == "pull":
            seen.destination_server, seen.source_server = here, there
        else:
            seen.source_server, seen.destination_server = here, there

    async def _read_copy(
        self,
        seen: TransferObservation,
        response: httpx.Response,
        response_at: list[float],
        parser: PerfMarkerParser,
    ) -> None:
        """The COPY's answer as it streams: the perf markers, then the verdict line."""
        timeline, clock = seen.timeline, seen.request.clock
        if response.is_success:
            # The server accepted the COPY and starts the copy: nothing has moved yet.
            # (XRootD 5.5's first perf marker comes with these headers; with several
            # streams it counts bytes scheduled, not moved, so its count is not used.)
            timeline.begin_streaming(response_at[-1] if response_at else clock.now())
        async for text in response.aiter_text():
            for _marker in parser.feed(text):
                seen.progressed(parser.total_bytes)
        parser.close()
        timeline.enter("close", clock.now())  # the verdict is in: only teardown is left


async def _still_looking(response: httpx.Response) -> bool:
    """Whether a redirector's answer is XRootD 5.5's 400 for a name it is still looking up."""
    if response.status_code != 400:
        return False
    return _LOOKING_UP in (await response.aread()).decode(errors="replace")


async def https_digest(
    client: httpx.AsyncClient, url: str, algorithm: str, headers: dict[str, str]
) -> str:
    """The file's `algorithm` digest from its server (`HEAD` with `Want-Digest`, RFC 3230);
    raises ChecksumStepError when the server refuses or gives no such digest."""
    response = await client.head(url, headers={**headers, "Want-Digest": algorithm})
    if response.status_code != 200:
        raise ChecksumStepError(
            classify_http_status(response.status_code),
            f"HEAD {url} (Want-Digest: {algorithm}) answered {response.status_code} "
            f"{response.reason_phrase}",
        )
    digest = digest_from_header(response.headers.get("Digest"), algorithm)
    if digest is None:
        raise ChecksumStepError(
            "remote-failure",
            f"HEAD {url} gave no {algorithm} digest (Digest: {response.headers.get('Digest')!r})",
        )
    return digest


async def delete_https(
    dst: Endpoint, path: str, creds: ClientCredentials, auth: Auth = "x509"
) -> str | None:
    """Remove a file through the endpoint's HTTPS side; returns an error message or None.

    A redirector (a site's front) answers with a redirect to the data server that has the
    file, which is followed (at most MAX_REDIRECTS)."""
    url = https_url(dst, path)
    try:
        headers = delete_token_header(creds, dst, path) if auth == "token" else {}
        async with httpx.AsyncClient(
            verify=client_ssl_context(creds, auth),
            timeout=httpx.Timeout(60.0),
            follow_redirects=dst.redirector,
            max_redirects=MAX_REDIRECTS,
        ) as client:
            response = await client.delete(url, headers=headers)
    except httpx.HTTPError as exc:
        return f"DELETE {url}: {type(exc).__name__}: {exc}"
    except (OSError, TokenError) as exc:
        return f"DELETE {url}: {exc}"
    if response.status_code in (200, 204, 404):
        return None  # 404: nothing was created, e.g. the transfer failed before opening
    return f"DELETE {url}: {response.status_code} {response.text.strip()[:200]}"

"""The token endpoint's rules: who gets a token and with which scopes (RFC 6749 4.4, the
client credentials grant a WLCG client such as the DOMA smoke test asks for).

The client is authenticated by its TLS client certificate (orchestrator/token_issuer.py
checks it against our CA); only the orchestrator's DN gets tokens, with storage scopes within
the orchestrator's own rights on the servers (servers/access.py); anyone else gets an OAuth
error (RFC 6749 5.2).
"""

from __future__ import annotations

import datetime as dt
import logging
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

from ca.tokens import (
    CLIENT_CREDENTIALS,
    CREATE,
    DEFAULT_LIFETIME,
    MODIFY,
    READ,
    TokenError,
    TokenMinter,
    client_identity,
    parse_storage_scope,
    token_audience,
)
from orchestrator.endpoints import BENCHMARK_PREFIX, SOURCE_PREFIX, TOKEN_AREA
from orchestrator.http_service import Answer

log = logging.getLogger(__name__)

# What a token asked for without `scope` opens: one directory of benchmark names. A WLCG
# scope's path is a directory (or a file), so the name prefix `/tpcbench-` cannot be one, and
# the token area `/tokens` would open the source file there to modification. Point a client
# that asks for no scope, such as the DOMA smoke test, at https://<node>/tpcbench-smoke.
DEFAULT_SCOPE_PATH = "/tpcbench-smoke"
DEFAULT_SCOPES = tuple(f"{activity}:{DEFAULT_SCOPE_PATH}" for activity in (READ, CREATE, MODIFY))
FORM = "application/x-www-form-urlencoded"
MAX_FORM_BYTES = 8192


class OAuthError(Exception):
    """A token request refused, as RFC 6749 5.2 words it: a status and an error code."""

    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(description)
        self.status, self.error, self.description = status, error, description

    def answer(self) -> Answer:
        return Answer.json(
            self.status, {"error": self.error, "error_description": self.description}
        )


def within_orchestrator_rights(activity: str, path: str) -> bool:
    """Whether every name a scope of `activity` on `path` can open is one the orchestrator may
    use so (servers/access.py; its tokens do the same in the token area): reading the
    benchmark's names (`/tpcbench-...`, `/tokens/tpcbench-...`), creating and modifying those
    that are not a source file. `path` is read as a bare name prefix, the most a server could
    read into it: `/tpcbench-s` may not create, it would reach `/tpcbench-source-...`."""
    name = path.removeprefix(TOKEN_AREA) if path.startswith(TOKEN_AREA + "/") else path
    if not name.startswith(BENCHMARK_PREFIX):
        return False
    if activity == READ:
        return True
    return not (name.startswith(SOURCE_PREFIX) or SOURCE_PREFIX.startswith(name))


def granted_scopes(requested: str | None) -> tuple[str, ...]:
    """The scopes of a token asked for with `requested` (space-separated; none: the
    DEFAULT_SCOPES), each a storage scope within the orchestrator's rights, else
    `invalid_scope` naming the first that is not."""
    if requested is None or not requested.strip():
        return DEFAULT_SCOPES
    granted = []
    for scope in requested.split():
        try:
            activity, path = parse_storage_scope(scope)
        except TokenError as exc:
            raise OAuthError(400, "invalid_scope", str(exc)) from None
        if not within_orchestrator_rights(activity, path):
            raise OAuthError(
                400,
                "invalid_scope",
                f"{scope} is beyond the orchestrator's rights: it may read names under "
                f"{BENCHMARK_PREFIX} (and {TOKEN_AREA}{BENCHMARK_PREFIX}) and create or modify "
                f"those that are not a source file ({SOURCE_PREFIX}...)",
            )
        granted.append(f"{activity}:{path}")
    return tuple(dict.fromkeys(granted))


def parse_form(content_type: str | None, body: bytes) -> dict[str, str]:
    """The request's form fields; each at most once (RFC 6749 3.2)."""
    if (content_type or "").split(";")[0].strip().lower() != FORM:
        raise OAuthError(400, "invalid_request", f"send the request as {FORM}")
    try:
        text = body.decode("ascii")
        pairs = urllib.parse.parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text))
    except (UnicodeDecodeError, ValueError):
        raise OAuthError(400, "invalid_request", "the request body is not a form") from None
    form: dict[str, str] = {}
    for key, value in pairs:
        if key in form:
            raise OAuthError(400, "invalid_request", f"{key} is given more than once")
        form[key] = value
    return form


@dataclass(frozen=True)
class TokenEndpoint:
    """Who gets which tokens: the orchestrator's DNs, tokens of `minter`'s issuer."""

    minter: TokenMinter
    orchestrator_dns: frozenset[str]
    lifetime: dt.timedelta = DEFAULT_LIFETIME

    @classmethod
    def of(cls, minter: TokenMinter, orchestrator_dns: Iterable[str]) -> TokenEndpoint:
        return cls(minter, frozenset(orchestrator_dns))

    def answer(self, content_type: str | None, body: bytes, certificate: bytes | None) -> Answer:
        """The answer to one token request (`certificate`: the client's verified leaf, DER)."""
        try:
            who = self._authenticate(certificate)
            form = parse_form(content_type, body)
            grant = form.get("grant_type")
            if grant is None:
                raise OAuthError(400, "invalid_request", "grant_type is missing")
            if grant != CLIENT_CREDENTIALS:
                raise OAuthError(
                    400, "unsupported_grant_type", f"only {CLIENT_CREDENTIALS} is granted here"
                )
            scopes = granted_scopes(form.get("scope"))
            try:
                audience = token_audience(form.get("audience"))
            except TokenError as exc:
                raise OAuthError(400, "invalid_request", str(exc)) from None
        except OAuthError as refusal:
            log.info("token refused (%s): %s", refusal.error, refusal.description)
            return refusal.answer()
        token = self.minter.mint(scopes, audience=audience, lifetime=self.lifetime)
        log.info("token for %s: %s (audience %s)", who, " ".join(scopes), audience)
        return Answer.json(
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": int(self.lifetime.total_seconds()),
                "scope": " ".join(scopes),
            },
        )

    def _authenticate(self, certificate: bytes | None) -> str:
        who = client_identity(certificate)
        if who is None:
            raise OAuthError(
                401, "invalid_client", "authenticate with a client certificate of our CA"
            )
        if who not in self.orchestrator_dns:
            raise OAuthError(401, "invalid_client", f"{who} gets no tokens here")
        return who

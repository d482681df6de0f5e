"""The tokens of a token-authorized HTTP-TPC request, as WLCG's HTTP-TPC specification sends them.

Each request gets its own short-lived, least-scope tokens: the server asked to COPY gets
`Authorization: Bearer <token>` for its own file, and the other side's token travels as
`TransferHeaderAuthorization`, which the COPY's server forwards as `Authorization` on its
GET (pull) or PUT (push). Each token's audience is the one server that must accept it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from ca.tokens import MAX_LIFETIME, TokenError, TokenMinter
from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.urls import https_origin

# A token is checked again on every request of a multi-stream pull: it must outlive the copy.
LIFETIME_MARGIN = dt.timedelta(minutes=1)

READ = "storage.read"
CREATE = "storage.create"  # new files only: every transfer writes a name of its own
MODIFY = "storage.modify"


def minter(creds: ClientCredentials) -> TokenMinter:
    if creds.tokens is None:
        raise TokenError(
            "token authorization asked for, but these credentials name no token issuer "
            "(a lab started before tokens existed? restart it: tpcbench lab down && lab up)"
        )
    return creds.tokens


def token_lifetime(timeout: float) -> dt.timedelta:
    return min(dt.timedelta(seconds=timeout) + LIFETIME_MARGIN, MAX_LIFETIME)


def copy_tokens(request: TransferRequest, destination_scopes: Sequence[str]) -> tuple[str, str]:
    """(source token, destination token) of one copy, each for its own server's audience and
    valid for the copy's timeout: reading the source file, and `destination_scopes` on the
    destination file."""
    tokens, lifetime = minter(request.creds), token_lifetime(request.timeout)
    read = tokens.mint(
        [f"{READ}:{request.src_path}"], audience=https_origin(request.src), lifetime=lifetime
    )
    write = tokens.mint(
        [f"{scope}:{request.dst_path}" for scope in destination_scopes],
        audience=https_origin(request.dst),
        lifetime=lifetime,
    )
    return read, write


def copy_token_headers(request: TransferRequest, *, pull: bool) -> dict[str, str]:
    """`Authorization` for the server that gets the COPY, `TransferHeaderAuthorization` for
    the other: reading the source file, creating the destination file, nothing more."""
    read, create = copy_tokens(request, [CREATE])
    own, other = (create, read) if pull else (read, create)
    return {"Authorization": f"Bearer {own}", "TransferHeaderAuthorization": f"Bearer {other}"}


def delete_token_header(creds: ClientCredentials, endpoint: Endpoint, path: str) -> dict[str, str]:
    """A DELETE looks the file up first, so its token may read and modify that one file."""
    token = minter(creds).mint(
        [f"{READ}:{path}", f"{MODIFY}:{path}"], audience=https_origin(endpoint)
    )
    return {"Authorization": f"Bearer {token}"}


def digest_token_headers(request: TransferRequest) -> tuple[dict[str, str], dict[str, str]]:
    """The checksum step's `Authorization` for the source and for the destination: reading
    each one file (a digest is a read), for its own server's audience."""
    tokens, lifetime = minter(request.creds), token_lifetime(request.timeout)
    return tuple(  # type: ignore[return-value]
        {
            "Authorization": "Bearer "
            + tokens.mint([f"{READ}:{path}"], audience=https_origin(endpoint), lifetime=lifetime)
        }
        for endpoint, path in ((request.src, request.src_path), (request.dst, request.dst_path))
    )

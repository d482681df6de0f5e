"""Macaroons: how an x509 HTTP-TPC copy authorizes its server-to-server leg.

XRootD 5.5's HTTP-TPC makes its GET (pull) or PUT (push) to the other server without a
client certificate. So, as FTS and gfal2 do with WLCG storage, the orchestrator first asks
that server, with its own certificate, for a macaroon scoped to the one file and the one
activity, and the COPY carries it as `TransferHeaderAuthorization`. The server caps a
macaroon at what the asking identity may do itself (servers/access.py), so it never grants
more than the orchestrator's own rights.
"""

from __future__ import annotations

import math

import httpx

from orchestrator.transfers.token_headers import LIFETIME_MARGIN

MACAROON_REQUEST = "application/macaroon-request"
DOWNLOAD = "DOWNLOAD"  # read the source file (pull)
UPLOAD = "UPLOAD"  # create the destination file (push)


class MacaroonError(Exception):
    """The server did not issue the macaroon (its answer is in the message)."""


def macaroon_request(activity: str, timeout: float) -> dict[str, object]:
    """The request body: one activity, valid as long as the copy may take (a multi-stream
    pull presents it again on every range it asks for)."""
    seconds = math.ceil(timeout + LIFETIME_MARGIN.total_seconds())
    return {"caveats": [f"activity:{activity}"], "validity": f"PT{seconds}S"}


async def request_macaroon(
    client: httpx.AsyncClient, url: str, activity: str, timeout: float
) -> str:
    """A macaroon for `activity` on the file at `url`, from the server that serves it."""
    response = await client.post(
        url,
        json=macaroon_request(activity, timeout),
        headers={"Content-Type": MACAROON_REQUEST},
    )
    if response.status_code != 200:
        detail = response.text.strip()[:200] or response.reason_phrase
        raise MacaroonError(
            f"{url} refused a macaroon for {activity}: {response.status_code} {detail}"
        )
    try:
        macaroon = response.json()["macaroon"]
    except (ValueError, KeyError, TypeError) as exc:
        raise MacaroonError(f"{url} answered without a macaroon: {response.text[:200]!r}") from exc
    if not isinstance(macaroon, str) or not macaroon:
        raise MacaroonError(f"{url} answered an empty macaroon")
    return macaroon

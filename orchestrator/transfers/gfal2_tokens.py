"""Token authorization for the gfal2 client: a least-scope token per endpoint, and how each
protocol hands it to gfal2 (docs/measurements.md#clients).

https: gfal-copy can send only one token to both ends, so the copy runs through
`gfal2_bearer_copy.py`, gfal-copy's own command with a token bound to each URL (gfal2's
`cred_set`). root://: gfal2's xrootd plugin takes a token only in the URL,
`?authz=Bearer%20<jwt>`. GridFTP has no token authorization.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote

from orchestrator.transfers.base import TransferRequest
from orchestrator.transfers.token_headers import CREATE, READ, copy_tokens

TOKEN_PROTOCOLS = ("https", "root")
# The system python with Debian's gfal2 bindings runs it, as it runs gfal-copy.
BEARER_COPY = Path(__file__).with_name("gfal2_bearer_copy.py")
# The driver reads {URL prefix: token} from here (not argv: the process list is public).
TOKENS_VARIABLE = "TPCBENCH_GFAL2_TOKENS"
# -I: neither this directory (our gfal2.py would shadow the bindings) nor PYTHON* variables.
PYTHON_FLAGS = ("-I", "-u", "-Wignore")
_AUTHZ = re.compile(r"(authz=Bearer%20)[^\s&\"'\\]+")


def endpoint_tokens(request: TransferRequest, protocol: str) -> tuple[str, str]:
    """(source token, destination token), each for its own server's audience and file.

    gfal2's http plugin stats the destination and gives up when that is refused (`DESTINATION
    OVERWRITE ... 403`), so its https destination token may read the file too; for root://
    a refused stat only means "not there yet", so creating it is all the token allows.
    """
    return copy_tokens(request, [CREATE, *([READ] if protocol == "https" else [])])


def with_authz(url: str, token: str) -> str:
    """A root:// URL carrying its token, as XRootD's SciTokens plugin reads it (the CGI)."""
    return f"{url}?authz=Bearer%20{quote(token, safe='')}"


def bearer_copy_argv(gfal_copy_argv: list[str], python: str) -> list[str]:
    """The same gfal-copy arguments, run by the driver that binds a token to each URL."""
    return [python, *PYTHON_FLAGS, str(BEARER_COPY), *gfal_copy_argv[1:]]


def bearer_copy_environment(tokens: dict[str, str]) -> dict[str, str]:
    return {TOKENS_VARIABLE: json.dumps(tokens)}


def redact(text: str) -> str:
    """gfal2 and XrdCl print root:// URLs whole: no token may reach a stored record."""
    return _AUTHZ.sub(r"\1<token>", text)

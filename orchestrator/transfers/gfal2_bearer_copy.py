"""`gfal-copy` with a bearer token of its own for each URL; run by /usr/bin/python3, not by us.

gfal-copy itself sends one token to both ends (`BEARER_TOKEN`, `-D BEARER:TOKEN=`), while
gfal2's API binds a credential to a URL prefix (`cred_set`). This runs gfal-copy's own
command (same stats, options, output and `gfal-copy error:` line) with every gfal2 context
carrying the tokens of TOKENS_VARIABLE: a JSON object {URL prefix: token}, read from the
environment so no token shows in the process list. Only the standard library and Debian's
gfal2 bindings are imported: our own package is not importable by the system python.

Usage: TPCBENCH_GFAL2_TOKENS='{"https://a/x": "<jwt>", ...}' python3 gfal2_bearer_copy.py
[gfal-copy options] SRC DST
"""

import json
import os
import sys

import gfal2  # type: ignore[import-not-found]
from gfal2_util.shell import Gfal2Shell  # type: ignore[import-not-found]

TOKENS_VARIABLE = "TPCBENCH_GFAL2_TOKENS"


def main(args: list[str]) -> int:
    tokens = json.loads(os.environ.pop(TOKENS_VARIABLE, "{}"))
    if not tokens:
        sys.stderr.write(f"gfal-copy error: 22 (Invalid argument) - {TOKENS_VARIABLE} is empty\n")
        return 22
    create_context = gfal2.creat_context

    def context_with_tokens():  # type: ignore[no-untyped-def]
        context = create_context()
        for prefix, token in tokens.items():
            context.cred_set(prefix, context.cred_new("BEARER", token))
        return context

    # gfal-copy's command makes its context with this module function when it executes.
    gfal2.creat_context = context_with_tokens
    return int(Gfal2Shell().main(["gfal-copy", *args]) or 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

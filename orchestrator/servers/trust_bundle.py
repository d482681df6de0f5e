"""The CA bundle xrootd's SciTokens plugin trusts: the system's, with our CA appended.

scitokens-cpp 0.7 (Debian bookworm) fetches the token issuer's keys over HTTPS trusting only
/etc/ssl/certs/ca-certificates.crt; no environment variable points it elsewhere. So the
bundle is made here and mounted over that file: by the lab (orchestrator/lab/token_trust.py,
podman_runtime.py) and by the chart's init container beside xrootd:

    python -m orchestrator.servers.trust_bundle --ca ca.crt --out DIR/ca-certificates.crt \\
        [--system-bundle /etc/ssl/certs/ca-certificates.crt] [--wait SECONDS]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

SYSTEM_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def trust_bundle(ca_cert: Path, system_bundle: Path = SYSTEM_BUNDLE) -> bytes:
    """The system's CA bundle (none if it is missing) with our CA appended."""
    system = system_bundle.read_bytes() if system_bundle.exists() else b""
    if system and not system.endswith(b"\n"):
        system += b"\n"
    return system + ca_cert.read_bytes()


def wait_for_file(path: Path, seconds: float, poll: float = 2.0) -> bool:
    """True once `path` holds something (a ConfigMap volume fills after the signer publishes)."""
    deadline = time.monotonic() + seconds
    while not (path.is_file() and path.stat().st_size > 0):
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)
    return True


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.servers.trust_bundle",
        description="Write the system CA bundle with our CA appended (for the SciTokens plugin).",
    )
    parser.add_argument("--ca", type=Path, required=True, help="our CA certificate (PEM)")
    parser.add_argument("--out", type=Path, required=True, help="the bundle to write")
    parser.add_argument("--system-bundle", type=Path, default=SYSTEM_BUNDLE)
    parser.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS", help="for --ca to appear"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not wait_for_file(args.ca, args.wait):
        print(f"trust_bundle: no CA certificate at {args.ca} after {args.wait:.0f} s",
              file=sys.stderr)  # fmt: skip
        return 1
    args.out.write_bytes(trust_bundle(args.ca, args.system_bundle))
    print(f"trust_bundle: {args.out}: {args.system_bundle} and {args.ca}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

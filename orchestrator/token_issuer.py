"""Our token issuer's HTTPS service: the discovery document and the public keys that servers
(xrootd's SciTokens plugin) fetch to check the tokens the orchestrator mints.

It serves two files of a folder and holds no signing key. The lab forks it beside its nodes
(orchestrator/lab/token_issuer.py); the chart runs it as a Deployment behind a Service
(charts/tpc-bench/templates/token-issuer.yaml), the folder being a ConfigMap the signer fills.

    python -m orchestrator.token_issuer --bind ADDR --port P --documents DIR \\
        --cert hostcert.pem --key hostkey.pem
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import ssl
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ca.tokens import JWKS_PATH, OPENID_CONFIGURATION_PATH, jwks, openid_configuration
from orchestrator.http_service import Answer, HttpService, Route

log = logging.getLogger(__name__)

# URL path -> the file (in the documents folder, or the signer's ConfigMap key) served there
DOCUMENTS = {OPENID_CONFIGURATION_PATH: "openid-configuration.json", JWKS_PATH: "jwks.json"}
CERTIFICATE_CHECK_SECONDS = 60.0


def issuer_documents(url: str, key_path: Path) -> dict[str, str]:
    """The issuer's two documents (file name -> JSON text) for the signing key `key_path`."""
    return {
        DOCUMENTS[OPENID_CONFIGURATION_PATH]: _json(openid_configuration(url)),
        DOCUMENTS[JWKS_PATH]: _json(jwks(key_path)),
    }


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2) + "\n"


def document_routes(documents: Path) -> dict[str, Route]:
    """Each document read when asked: a ConfigMap volume's files may appear after the start."""

    def serve(name: str) -> Route:
        def answer(query: str) -> Answer:
            try:
                body = (documents / name).read_bytes()
            except OSError:
                return Answer.json(503, {"error": f"{name} is not published yet"})
            return Answer(200, body, "application/json")

        return answer

    return {path: serve(name) for path, name in DOCUMENTS.items()}


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    return context


class CertificateWatch:
    """Serves a renewed certificate from the next connection on, without a restart. The
    renewal writes the key first, then the certificate: a pair that does not load is kept
    for the next look."""

    def __init__(self, service: HttpService, cert: Path, key: Path) -> None:
        self.service, self.cert, self.key = service, cert, key
        self.loaded = self._stamp()

    def _stamp(self) -> int:
        return self.cert.stat().st_mtime_ns

    def check(self) -> bool:
        """True when a changed certificate was loaded into the service."""
        try:
            stamp = self._stamp()
            if stamp == self.loaded:
                return False
            self.service.tls = server_context(self.cert, self.key)
        except (OSError, ssl.SSLError) as exc:
            log.warning("the renewed certificate %s does not load yet: %s", self.cert, exc)
            return False
        self.loaded = stamp
        log.info("serving the renewed certificate %s", self.cert)
        return True

    def run(self, stop: threading.Event, interval: float = CERTIFICATE_CHECK_SECONDS) -> None:
        while not stop.wait(interval):
            self.check()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m orchestrator.token_issuer",
        description="Serve the token issuer's discovery document and keys over HTTPS.",
    )
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--documents", type=Path, required=True, help="folder of the two files")
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    service = HttpService(
        (args.bind, args.port),
        document_routes(args.documents),
        name="tpc-bench-issuer",
        tls=server_context(args.cert, args.key),
    )
    stop = threading.Event()
    watch = CertificateWatch(service, args.cert, args.key)
    threading.Thread(target=watch.run, args=(stop,), name="certificate-watch", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"token issuer serving https://{args.bind}:{args.port}", flush=True)
    try:
        service.serve_forever()
    finally:
        stop.set()
        service.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Our token issuer's HTTPS service: the discovery document and the public keys that servers
(xrootd's SciTokens plugin) fetch to check the tokens the orchestrator mints; and, where it
holds the signing key (the lab), a token endpoint.

Without `--signing-key` it serves two files of a folder and holds no key: so the chart runs
it, as a Deployment behind a Service (charts/tpc-bench/templates/token-issuer.yaml), the
folder being a ConfigMap the signer fills, and its discovery document names no token
endpoint. The lab forks it beside its nodes with the key (orchestrator/lab/token_issuer.py).

The token endpoint (`POST /token`) is the OAuth 2.0 client credentials grant (RFC 6749 4.4)
a WLCG client asks for (the DOMA smoke test's `-t scitoken`): form-encoded
`grant_type=client_credentials`, optional `scope` and `audience`. The client authenticates
with its TLS client certificate (RFC 8705 `tls_client_auth`), one of our CA or a first-level
RFC 3820 proxy of one, mapped as the servers map it (servers/access.py): only the
orchestrator's DN gets a token, with storage scopes within the orchestrator's own rights
(`granted_scopes`); anyone else gets an OAuth error.

    python -m orchestrator.token_issuer --bind ADDR --port P --documents DIR \\
        --cert hostcert.pem --key hostkey.pem \\
        [--signing-key issuer-key.pem --client-ca-dir CERTDIR --orchestrator-dn DN ...]
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
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from ca.tokens import (
    JWKS_PATH,
    OPENID_CONFIGURATION_PATH,
    TOKEN_PATH,
    TokenError,
    TokenMinter,
    jwks,
    openid_configuration,
)
from orchestrator.http_service import Answer, HttpService, Route
from orchestrator.token_endpoint import FORM, MAX_FORM_BYTES, OAuthError, TokenEndpoint

log = logging.getLogger(__name__)

# URL path -> the file (in the documents folder, or the signer's ConfigMap key) served there
DOCUMENTS = {OPENID_CONFIGURATION_PATH: "openid-configuration.json", JWKS_PATH: "jwks.json"}
CERTIFICATE_CHECK_SECONDS = 60.0


def issuer_documents(url: str, key_path: Path, *, token_endpoint: bool = False) -> dict[str, str]:
    """The issuer's two documents (file name -> JSON text) for the signing key `key_path`;
    `token_endpoint` when the service serving them holds that key (the lab's)."""
    return {
        DOCUMENTS[OPENID_CONFIGURATION_PATH]: _json(
            openid_configuration(url, token_endpoint=token_endpoint)
        ),
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


class _TokenRequests(BaseHTTPRequestHandler):
    """POST to the token endpoint (HttpService itself answers GET routes only)."""

    server: IssuerService

    def do_POST(self) -> None:
        endpoint = self.server.token_endpoint
        if self.path.partition("?")[0] != TOKEN_PATH or endpoint is None:
            self._send(Answer.json(404, {"error": f"nothing to POST to at {self.path}"}))
            return
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or int(length) > MAX_FORM_BYTES:
            refusal = OAuthError(
                400, "invalid_request", f"a form of at most {MAX_FORM_BYTES} bytes"
            )
            self._send(refusal.answer())
            return
        body = self.rfile.read(int(length))
        certificate = None
        if isinstance(self.connection, ssl.SSLSocket):
            certificate = self.connection.getpeercert(binary_form=True)
        try:
            answer = endpoint.answer(self.headers.get("Content-Type"), body, certificate)
        except Exception:  # a bug or an unreadable key: 500 for this request, the service lives
            log.exception("POST %s failed", self.path)
            answer = Answer.json(500, {"error": "server_error"})
        self._send(answer)

    def _send(self, answer: Answer) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(answer.body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Pragma", "no-cache")
        self.end_headers()
        self.wfile.write(answer.body)


class IssuerService(HttpService):
    """The documents' GET routes and, with a `token_endpoint`, token requests by POST."""

    def __init__(
        self,
        address: tuple[str, int],
        routes: dict[str, Route],
        *,
        token_endpoint: TokenEndpoint | None = None,
        **options: Any,
    ) -> None:
        if token_endpoint is not None:
            routes = {**routes, TOKEN_PATH: _post_only}
        super().__init__(address, routes, **options)
        self.token_endpoint = token_endpoint
        self.RequestHandlerClass = type(
            "IssuerHandler", (_TokenRequests, self.RequestHandlerClass), {}
        )


def _post_only(query: str) -> Answer:
    return OAuthError(405, "invalid_request", f"POST a {FORM} token request").answer()


def server_context(cert: Path, key: Path, client_ca_dir: Path | None = None) -> ssl.SSLContext:
    """The service's TLS; with `client_ca_dir` (hashed, like /etc/grid-security/certificates) it
    asks for a client certificate and verifies one given against those CAs alone, RFC 3820
    proxies allowed; a client may still give none (the servers fetching the keys)."""
    context = ssl.create_default_context(
        ssl.Purpose.CLIENT_AUTH, capath=str(client_ca_dir) if client_ca_dir else None
    )
    context.load_cert_chain(str(cert), str(key))
    if client_ca_dir is not None:
        context.verify_mode = ssl.CERT_OPTIONAL
        context.verify_flags |= ssl.VERIFY_ALLOW_PROXY_CERTS
    return context


class CertificateWatch:
    """Serves a renewed certificate from the next connection on, without a restart. The
    renewal writes the key first, then the certificate: a pair that does not load is kept
    for the next look."""

    def __init__(
        self, service: HttpService, cert: Path, key: Path, client_ca_dir: Path | None = None
    ) -> None:
        self.service, self.cert, self.key = service, cert, key
        self.client_ca_dir = client_ca_dir
        self.loaded = self._stamp()

    def _stamp(self) -> int:
        return self.cert.stat().st_mtime_ns

    def check(self) -> bool:
        """True when a changed certificate was loaded into the service."""
        try:
            stamp = self._stamp()
            if stamp == self.loaded:
                return False
            self.service.tls = server_context(self.cert, self.key, self.client_ca_dir)
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
        description="Serve the token issuer's discovery document and keys over HTTPS; with "
        "--signing-key also its token endpoint (POST /token, client credentials, for the "
        "orchestrator's certificate only).",
    )
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--documents", type=Path, required=True, help="folder of the two files")
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    endpoint = parser.add_argument_group("token endpoint (only where the issuer holds its key)")
    endpoint.add_argument(
        "--signing-key",
        type=Path,
        help="the issuer's signing key: serve POST /token, tokens of the issuer that the "
        "discovery document in --documents names",
    )
    endpoint.add_argument(
        "--client-ca-dir", type=Path, help="hashed CA directory that client certificates verify to"
    )
    endpoint.add_argument(
        "--orchestrator-dn",
        action="append",
        default=[],
        metavar="DN",
        help="a DN (slash form) that gets tokens; repeat for several",
    )
    return parser


def token_endpoint_of(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TokenEndpoint:
    if args.client_ca_dir is None or not args.orchestrator_dn:
        parser.error("--signing-key needs --client-ca-dir and at least one --orchestrator-dn")
    config = args.documents / DOCUMENTS[OPENID_CONFIGURATION_PATH]
    try:
        issuer = json.loads(config.read_text())["issuer"]
        minter = TokenMinter.for_key(issuer, args.signing_key)  # loads (and keeps) the key now
    except (OSError, ValueError, KeyError, TokenError) as exc:
        parser.error(f"--signing-key needs the issuer's discovery document {config}: {exc}")
    return TokenEndpoint.of(minter, args.orchestrator_dn)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    endpoint = token_endpoint_of(args, parser) if args.signing_key else None
    client_ca_dir = args.client_ca_dir if endpoint else None
    service = IssuerService(
        (args.bind, args.port),
        document_routes(args.documents),
        token_endpoint=endpoint,
        name="tpc-bench-issuer",
        tls=server_context(args.cert, args.key, client_ca_dir),
    )
    stop = threading.Event()
    watch = CertificateWatch(service, args.cert, args.key, client_ca_dir)
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

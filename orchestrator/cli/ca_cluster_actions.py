"""`tpcbench ca signer` and `tpcbench ca request`: certificates on a cluster, through the
Kubernetes CSR API (the chart runs both; see docs/install.md, Certificates)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ca.csr_policy import CLIENT_SIGNER, HOST_SIGNER, ISSUER_SIGNER, SignerPolicy
from orchestrator.cluster.certificate_request import KINDS
from orchestrator.errors import UserError

if TYPE_CHECKING:
    from orchestrator.cluster.signer import TokenIssuerConfig


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a label like tpc-bench.io/network=100000"
        )
    return key, value


def register_cluster_actions(actions: argparse._SubParsersAction) -> None:
    signer = actions.add_parser(
        "signer",
        help="the cluster's certificate signer (holds the CA key; a long-running service)",
        description="Keeps the CA in a Secret, publishes the grid-security directory and the "
        "grid-mapfile as ConfigMaps, and approves and signs, or denies with a reason, "
        "CertificateSigningRequests for the host and client signer names.",
    )
    signer.add_argument("--namespace", default=None, help="default: the pod's own")
    signer.add_argument("--ca-secret", required=True, help="Secret holding tls.crt and tls.key")
    signer.add_argument(
        "--existing-ca",
        action="store_true",
        help="the Secret holds the site's CA: never make one",
    )
    signer.add_argument("--ca-subject", default=None, help="subject of a CA made here")
    signer.add_argument("--grid-security-configmap", required=True)
    signer.add_argument("--grid-mapfile-configmap", required=True)
    signer.add_argument("--servers-service-account", required=True)
    signer.add_argument("--orchestrator-service-account", required=True)
    signer.add_argument(
        "--node-label",
        type=_label,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a label every benchmark node carries (repeatable)",
    )
    signer.add_argument("--client-name", default="orchestrator", help="the client certificate's CN")
    signer.add_argument(
        "--client-dn",
        default=None,
        help="the DN the grid-mapfile maps, in Globus form (default: the one this CA gives "
        "--client-name); for a client certificate of your own",
    )
    signer.add_argument("--host-signer", default=HOST_SIGNER)
    signer.add_argument("--client-signer", default=CLIENT_SIGNER)
    tokens = signer.add_argument_group(
        "token issuer", "keep its signing key, publish its documents, sign its certificate"
    )
    tokens.add_argument("--token-issuer-url", default=None, metavar="URL", help="https://NAME")
    tokens.add_argument("--token-key-secret", default=None, help="Secret for the signing key")
    tokens.add_argument("--token-documents-configmap", default=None, help="for its documents")
    tokens.add_argument("--issuer-service-account", default=None)
    tokens.add_argument("--issuer-signer", default=ISSUER_SIGNER)
    signer.add_argument("--max-days", type=int, default=365, help="longest validity granted")
    signer.add_argument("--metrics-bind", default="0.0.0.0")
    signer.add_argument("--metrics-port", type=int, default=9107, help="/healthz and /metrics")
    signer.add_argument("--kubeconfig", default=None, help="default: in-cluster, else ~/.kube")
    signer.add_argument("--once", action="store_true", help="answer what is waiting, then exit")
    signer.set_defaults(func=_signer)

    request = actions.add_parser(
        "request",
        help="ask the cluster's signer for a host or client certificate (CSR API)",
        description="Makes a key here, asks the signer through a CertificateSigningRequest "
        "with this pod's ServiceAccount, and writes the certificate and key into --out-dir.",
    )
    request.add_argument("--kind", choices=KINDS, required=True)
    request.add_argument(
        "--name",
        required=True,
        help="the node name (host), the client name, or the issuer Service's DNS name (issuer)",
    )
    request.add_argument("--ip", action="append", default=[], help="the node's address (host)")
    request.add_argument("--out-dir", type=Path, required=True)
    request.add_argument("--signer", default="", help="signer name (default per kind)")
    request.add_argument("--days", type=int, default=365)
    request.add_argument("--timeout", type=float, default=300.0, help="seconds to wait")
    request.add_argument(
        "--keep-renewed",
        action="store_true",
        help="stay running and renew when a third of the lifetime is left",
    )
    request.add_argument(
        "--grid-mapfile",
        type=Path,
        default=None,
        help="also write a grid-mapfile mapping the new certificate's DN to the server user "
        "(for servers whose client is the node itself: the preliminary benchmarks)",
    )
    request.add_argument("--kubeconfig", default=None, help="default: in-cluster, else ~/.kube")
    request.set_defaults(func=_request)


def _logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr
    )


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _token_issuer(args: argparse.Namespace) -> TokenIssuerConfig | None:
    """The token issuer's part of the signer's configuration: all its options, or none."""
    from orchestrator.cluster.signer import TokenIssuerConfig

    given = {
        "--token-issuer-url": args.token_issuer_url,
        "--token-key-secret": args.token_key_secret,
        "--token-documents-configmap": args.token_documents_configmap,
        "--issuer-service-account": args.issuer_service_account,
    }
    if not any(given.values()):
        return None
    if missing := [flag for flag, value in given.items() if not value]:
        raise UserError(f"a token issuer needs {', '.join(missing)} too")
    url = urlsplit(args.token_issuer_url)
    if url.scheme != "https" or not url.hostname:
        raise UserError(f"--token-issuer-url {args.token_issuer_url!r} is not an https://NAME URL")
    return TokenIssuerConfig(
        url=args.token_issuer_url,
        key_secret=args.token_key_secret,
        documents_configmap=args.token_documents_configmap,
    )


def _signer(args: argparse.Namespace) -> int:
    from orchestrator.cluster.api_client import load_api_client
    from orchestrator.cluster.signer import ClusterSigner, SignerConfig
    from orchestrator.service.metrics import MetricsServer

    _logging()
    tokens = _token_issuer(args)
    api_client, namespace = load_api_client(args.kubeconfig)
    policy = SignerPolicy(
        namespace=args.namespace or namespace,
        servers_service_account=args.servers_service_account,
        orchestrator_service_account=args.orchestrator_service_account,
        node_labels=dict(args.node_label),
        client_name=args.client_name,
        host_signer=args.host_signer,
        client_signer=args.client_signer,
        max_days=args.max_days,
        issuer_service_account=args.issuer_service_account or "",
        issuer_name=(urlsplit(tokens.url).hostname or "") if tokens else "",
        issuer_signer=args.issuer_signer,
    )
    config = SignerConfig(
        policy=policy,
        ca_secret=args.ca_secret,
        grid_security_configmap=args.grid_security_configmap,
        grid_mapfile_configmap=args.grid_mapfile_configmap,
        create_ca=not args.existing_ca,
        ca_subject=args.ca_subject,
        client_dn=args.client_dn,
        tokens=tokens,
    )
    # The CA key is written only to a private directory in memory-backed scratch space.
    with tempfile.TemporaryDirectory(prefix="tpcbench-signer-") as workdir:
        signer = ClusterSigner(api_client, config, Path(workdir))
        signer.load_or_create_ca()
        signer.load_or_create_token_key()
        signer.publish()
        if args.once:
            for name, verdict in signer.process_pending():
                answer = "approved" if verdict.approved else "denied"
                print(f"{answer} {name}: {verdict.message}")
            return 0
        server = MetricsServer(signer.metrics, signer.health, args.metrics_bind, args.metrics_port)
        server.start()
        logging.getLogger(__name__).info(
            "signing for %s in namespace %s; /healthz on port %d",
            ", ".join(signer.signer_names()), policy.namespace, server.port,
        )  # fmt: skip
        try:
            signer.run(_stop_on_signals())
        finally:
            server.close()
    return 0


def _request(args: argparse.Namespace) -> int:
    from orchestrator.cluster.api_client import load_api_client
    from orchestrator.cluster.certificate_request import CertificateWanted, keep_renewed, obtain

    _logging()
    if args.kind == "host" and not args.ip:
        raise UserError("a host certificate needs the node's address: --ip (status.hostIP)")
    if args.days < 1:
        raise UserError("--days must be at least 1")
    wanted = CertificateWanted(
        kind=args.kind, name=args.name, ips=tuple(args.ip), days=args.days, signer=args.signer
    )
    api_client, _ = load_api_client(args.kubeconfig)
    if args.keep_renewed:
        keep_renewed(api_client, wanted, args.out_dir, _stop_on_signals(), timeout=args.timeout)
        return 0
    path = obtain(api_client, wanted, args.out_dir, timeout=args.timeout)
    print(f"{args.kind} certificate for {args.name} written to {path}")
    if args.grid_mapfile is not None:
        write_self_grid_mapfile(path, args.grid_mapfile)
        print(f"grid-mapfile written to {args.grid_mapfile}")
    return 0


def write_self_grid_mapfile(cert: Path, target: Path) -> None:
    """A grid-mapfile letting the holder of `cert` in as the servers' user."""
    from cryptography import x509

    from ca.keys import write_public
    from ca.names import to_globus_dn
    from orchestrator.servers import layout, render_grid_mapfile

    subject = x509.load_pem_x509_certificate(cert.read_bytes()).subject
    write_public(target, render_grid_mapfile({to_globus_dn(subject): layout.SERVER_USER}).encode())

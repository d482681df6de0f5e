"""The Kubernetes API client every cluster-side part uses: in-cluster first, else kubeconfig.

Discovery lists the server pods with it, `tpcbench ca signer|request` talk to the CSR API, and
a link baseline runs iperf3 in a server pod through it (pod_exec.py).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

log = logging.getLogger(__name__)

# Where a pod finds its ServiceAccount token, the cluster CA and its namespace.
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def load_api_client(
    kubeconfig: str | Path | None = None,
    context: str | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> tuple[ApiClient, str]:
    """An ApiClient and the namespace to look in.

    An explicit `kubeconfig` is used as given. Otherwise the in-cluster configuration (the
    pod's ServiceAccount) comes first, then the default kubeconfig ($KUBECONFIG,
    ~/.kube/config). The namespace is the pod's own, else the kubeconfig context's, else
    "default".
    """
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    configuration = client.Configuration()
    if kubeconfig is None:
        in_cluster = InClusterConfigLoader(
            token_filename=str(service_account_dir / "token"),
            cert_filename=str(service_account_dir / "ca.crt"),
        )
        try:
            in_cluster.load_and_set(configuration)
        except ConfigException as exc:
            log.info("no in-cluster configuration (%s); using the kubeconfig", exc)
        else:
            log.info("using the in-cluster configuration (%s)", service_account_dir)
            namespace_file = service_account_dir / "namespace"
            namespace = namespace_file.read_text().strip() if namespace_file.exists() else ""
            return client.ApiClient(configuration), namespace or "default"
    config_file = str(kubeconfig) if kubeconfig is not None else None
    try:
        config.load_kube_config(
            config_file=config_file,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
        contexts, active = config.list_kube_config_contexts(config_file=config_file)
    except (ConfigException, OSError) as exc:
        raise UserError(
            f"no Kubernetes configuration: not in a cluster and no usable kubeconfig ({exc})"
        ) from exc
    if context is not None:  # load_kube_config has checked that it exists
        active = next(c for c in contexts if c["name"] == context)
    log.info("using kubeconfig %s (context %s)", config_file or "(default)", active["name"])
    namespace = active.get("context", {}).get("namespace") or "default"
    return client.ApiClient(configuration), namespace

"""What a cluster lab adds to a bare control plane: cluster DNS, volumes, kubelet access.

- CoreDNS (our image of v1.11.3) as a Deployment behind the cluster DNS Service IP, serving
  only `cluster.local` and the reverse zones: the lab has no upstream resolver.
- A default StorageClass of local volumes (`tpc-bench-lab`, WaitForFirstConsumer) and a few
  pre-made PersistentVolumes per node under the lab's directory; kubelet applies a pod's
  fsGroup to local volumes, so PostgreSQL (uid 999) and the orchestrator (uid 10001) both
  own theirs. Every node is this one machine, so any directory serves any node.
- The API server's kubelet client may use the kubelets' API (logs, exec).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.lab.kube.control_plane import CLUSTER_DNS_IP, CLUSTER_DOMAIN

COREDNS_IMAGE = "localhost/tpc-bench/coredns:1.11.3"
STORAGE_CLASS = "tpc-bench-lab"
VOLUMES_PER_NODE = 3
VOLUME_SIZE = "20Gi"
KUBELET_CLIENT = "kube-apiserver-kubelet-client"

COREFILE = f""".:53 {{
    errors
    health {{
        lameduck 5s
    }}
    ready
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }}
    cache 30
    loop
    reload
}}
"""


def _meta(name: str, namespace: str | None = None, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **extra}
    if namespace:
        meta["namespace"] = namespace
    return meta


def kubelet_access() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta("tpc-bench-lab:apiserver-kubelet-client"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:kubelet-api-admin",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": KUBELET_CLIENT}
            ],
        }
    ]


def cluster_dns() -> list[dict[str, Any]]:
    ns = "kube-system"
    labels = {"k8s-app": "kube-dns"}
    rules = [
        {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
         "verbs": ["list", "watch"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
         "verbs": ["list", "watch"]},
    ]  # fmt: skip
    container = {
        "name": "coredns",
        "image": COREDNS_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": ["-conf", "/etc/coredns/Corefile"],
        "ports": [
            {"name": "dns", "containerPort": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
        ],
        "resources": {"requests": {"cpu": "20m", "memory": "40Mi"}, "limits": {"memory": "120Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        },
        "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": True}],
        "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 5},
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta("coredns", ns)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta("system:coredns"),
            "rules": rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta("system:coredns"),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:coredns",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": ns}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta("coredns", ns),
            "data": {"Corefile": COREFILE},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("coredns", ns, labels=labels),
            "spec": {
                # two on different nodes, as clusters run it: names still resolve while one
                # node's kubelet is down (its pods leave the Service's endpoints)
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "affinity": {
                            "podAntiAffinity": {
                                "preferredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "weight": 100,
                                        "podAffinityTerm": {
                                            "labelSelector": {"matchLabels": labels},
                                            "topologyKey": "kubernetes.io/hostname",
                                        },
                                    },
                                ]
                            }
                        },
                        "serviceAccountName": "coredns",
                        "dnsPolicy": "Default",
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 65532,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [container],
                        "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("kube-dns", ns, labels=labels),
            "spec": {
                "selector": labels,
                "clusterIP": CLUSTER_DNS_IP,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                ],
            },
        },
    ]


def local_volumes(nodes: list[str], volume_root: Path) -> list[dict[str, Any]]:
    """The default StorageClass and VOLUMES_PER_NODE local volumes per node; makes the dirs."""
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": _meta(
                STORAGE_CLASS,
                annotations={"storageclass.kubernetes.io/is-default-class": "true"},
            ),
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Retain",
        }
    ]
    for node in nodes:
        for i in range(1, VOLUMES_PER_NODE + 1):
            name = f"{node}-volume-{i}"
            folder = volume_root / name
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o755)
            affinity = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In",
                                 "values": [node]}
                            ]
                        }
                    ]
                }
            }  # fmt: skip
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": _meta(name),
                    "spec": {
                        "capacity": {"storage": VOLUME_SIZE},
                        "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "storageClassName": STORAGE_CLASS,
                        "local": {"path": str(folder)},
                        "nodeAffinity": affinity,
                    },
                }
            )
    return objects

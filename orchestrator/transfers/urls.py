"""How a file under an endpoint's data root is named in each protocol (see Endpoint)."""

from __future__ import annotations

from orchestrator.endpoints import Endpoint


def _host(endpoint: Endpoint) -> str:
    return f"[{endpoint.address}]" if ":" in endpoint.address else endpoint.address


def _name(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"path {path!r} must start with '/' (a name under the data root)")
    return path


def https_url(endpoint: Endpoint, path: str) -> str:
    return f"https://{_host(endpoint)}:{endpoint.ports['https']}{_name(path)}"


def root_url(endpoint: Endpoint, path: str) -> str:
    # The double slash makes the path absolute in the xroot namespace (data root exported as /).
    return f"root://{_host(endpoint)}:{endpoint.ports['root']}/{_name(path)}"


def root_server(endpoint: Endpoint) -> str:
    """`host:port` of the endpoint's root:// side, as `xrdfs` takes it."""
    return f"{_host(endpoint)}:{endpoint.ports['root']}"


def gsiftp_url(endpoint: Endpoint, path: str) -> str:
    # GridFTP serves the real filesystem, so the data root is part of the path.
    return f"gsiftp://{_host(endpoint)}:{endpoint.ports['gridftp']}{endpoint.data_root.rstrip('/')}{_name(path)}"


def https_origin(endpoint: Endpoint) -> str:
    """The server's own https URL without a path: the audience its tokens are minted for."""
    return f"https://{_host(endpoint)}:{endpoint.ports['https']}"

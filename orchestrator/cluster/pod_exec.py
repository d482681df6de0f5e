"""A command in a container of a pod, through the API server (what `kubectl exec` does).

A link baseline on a cluster runs iperf3's client in the source node's XRootD pod, whose
"iperf3" sidecar is on the node's network (orchestrator/prelim/baseline.py). The caller's
ServiceAccount needs get and create on pods/exec in the pod's namespace (the chart's Role
grants both with baseline.enabled: a websocket exec is a GET, which Kubernetes 1.31 also
checks as create).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from orchestrator.cluster.api_client import load_api_client
from orchestrator.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# What the API server answered the websocket handshake with, as the client reports it.
_HANDSHAKE = re.compile(r"Handshake status (\d{3})")
# The exit code, -1, when the container could not start the command at all.
NOT_STARTED = -1


def run_in_pod(
    pod: str,
    container: str,
    argv: list[str],
    timeout: float,
    *,
    api_client: ApiClient | None = None,
) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `argv` in `container` of `pod` ("namespace/name").

    The exit code is the command's, or NOT_STARTED when the container could not run it (the
    runtime's reason is then stderr). UserError when the exec cannot happen: not allowed
    (RBAC), the pod or the container gone, the API server unreachable; TimeoutError when the
    command still runs after `timeout` seconds (the connection is closed; a command that does
    not end by itself, unlike iperf3's client, may go on in the container).
    `api_client`: default, the in-cluster configuration, else the kubeconfig.
    """
    from kubernetes import client
    from kubernetes.stream import stream
    from kubernetes.stream.ws_client import ERROR_CHANNEL, STDERR_CHANNEL, STDOUT_CHANNEL

    namespace, name = _split(pod)
    if api_client is None:
        api_client, _ = load_api_client()
    core = client.CoreV1Api(api_client)
    try:
        session = stream(
            core.connect_get_namespaced_pod_exec,
            name,
            namespace,
            container=container,
            command=argv,
            stdin=False,
            stdout=True,
            stderr=True,
            tty=False,
            _preload_content=False,
        )
    except client.ApiException as exc:
        raise _refused(exc, pod, container, api_client.configuration.host) from exc
    try:
        session.run_forever(timeout=timeout)
        if session.is_open():
            raise TimeoutError(f"{argv[0]} in pod {pod} ({container}) ran past {timeout:g} s")
        stdout = session.read_channel(STDOUT_CHANNEL)
        stderr = session.read_channel(STDERR_CHANNEL)
        code, reason = exit_status(session.read_channel(ERROR_CHANNEL))
    finally:
        session.close()
    return code, stdout, f"{stderr}{reason}"


def exit_status(status: str) -> tuple[int, str]:
    """The exit code in the exec's status (a v1 Status on the error channel), and the
    runtime's message when the command did not run (else "")."""
    try:
        parsed: Any = json.loads(status) if status.strip() else {}
    except ValueError:
        return NOT_STARTED, status.strip()
    if not isinstance(parsed, dict) or "status" not in parsed:
        return NOT_STARTED, f"the exec ended without an exit status ({status.strip() or 'none'})"
    if parsed.get("status") == "Success":
        return 0, ""
    if parsed.get("reason") == "NonZeroExitCode":
        for cause in (parsed.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                return int(cause.get("message", NOT_STARTED)), ""
    return NOT_STARTED, str(parsed.get("message") or parsed)


def _split(pod: str) -> tuple[str, str]:
    namespace, _, name = pod.partition("/")
    if not namespace or not name or "/" in name:
        raise UserError(f"a pod is named namespace/name, not {pod!r}")
    return namespace, name


def _refused(exc: Exception, pod: str, container: str, host: str) -> UserError:
    """Why the API server refused the exec (or could not be reached), in one line."""
    cause = exc.__context__  # the websocket client's own exception: the HTTP answer
    status = getattr(cause, "status_code", None)
    if status is None:
        found = _HANDSHAKE.search(str(exc))
        status = int(found.group(1)) if found else None
    message = _status_message(getattr(cause, "resp_body", None))
    namespace = pod.partition("/")[0]
    said = f": {message}" if message else ""
    if status == 403:
        return UserError(
            f"may not exec into pod {pod}: this ServiceAccount needs get and create on "
            f"pods/exec in namespace {namespace} (the chart grants them with "
            f"baseline.enabled=true){said}"
        )
    if status == 404:
        return UserError(f"pod {pod} is gone (deleted or replaced since discovery){said}")
    if status is not None:
        return UserError(
            f"cannot exec in container {container} of pod {pod}: {status} {message or exc}"
        )
    return UserError(f"cannot reach the Kubernetes API at {host} to exec in pod {pod}: {exc}")


def _status_message(body: Any) -> str:
    """The `message` of a v1 Status the API server answered with, if any."""
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        return str(body).strip()[:300]
    return str(parsed.get("message", "")) if isinstance(parsed, dict) else ""

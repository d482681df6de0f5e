"""XRootD redirectors on real servers (Debian's xrootd 5.5.3), secured as the lab's servers.

On 127.0.0.1 (tests/servers/redirector_cluster.py): a source server; a meta-manager; site A,
a manager with two data servers; site B, a manager with one data server; both managers under
the meta-manager. Our CA, the secure configuration, the orchestrator's client certificate.

What these tests pin, and what a client through a redirector must do:
- HTTPS GET/HEAD to a manager: 302 to `https://<data server>:<xroot port>/name` (HTTPS shares
  the xroot port). Locally a redirect costs 20-30 ms (one more TLS connection).
- The quirk: the FIRST HTTP-TPC COPY of a new name to a manager fails, about 1 s in (the
  cms lookup delay), with `400 Failed to open local resource`; the manager's log shows only
  `TPC_PullRequest: event=PULL_START, local=/name, ...` and no REDIRECT line (tpc.trace
  info). xrootd 5.5.3's TPC handler opens the name for create on the manager, the manager
  stalls the open while cmsd asks its servers, and the handler fails where an xroot client
  would wait. Once the lookup has settled, the same COPY gets `307` to a data server (log:
  `event=REDIRECT, ..., status=307; Location: https://<data server>///name`).
  What a client should do, measured here (cms.delay lookup 1 qdl 2): retry the COPY after the
  400 no sooner than the lookup delay: retried at once, or 0.2 or 0.5 s later, it failed
  again in 3 of 5 tries; 0.8, 1 or 1.5 s later it got the 307 in 6 of 6 (and in every run
  of these tests, which wait 1 s). A HEAD of the
  name first also avoids it (404 after 1.4-2.8 s, then the COPY is redirected at once), but
  costs at least as much as the failed COPY and a 1 s wait (about 2.1 s). Either way, it is
  part of what the redirector costs and belongs in the measured redirect phase.
- Site to site (Source: the other site's manager): the destination's TPC handler follows the
  source manager's 302 itself; the COPY's perf marker names the source data server it read
  from (`RemoteConnections: tcp:127.0.0.1:19621`), the 307 the destination data server. A
  push (COPY to the source, Destination: a manager) needs no retry: the source's PUT to
  the manager waits out the lookup and follows the redirect (about 2 s on a new name).
- root:// TPC (`xrdcp --tpc only SRC root://MANAGER//name`): the manager answers the open
  with kXR_redirect; no such quirk (XrdCl waits out the stall); 8 MiB in about 5 s locally
  (the TPC poll plus the lookup).
- A meta-manager redirects a lookup to the site manager whose server has the file, which
  redirects to the data server: two 302s.
- Security holds through the manager: it checks the authorization database before it
  redirects (anonymous, a certificate not in the grid map, a name outside the identity's
  rights: 403 from the manager itself, no redirect). A macaroon asked of the manager (POST)
  is NOT redirected: the manager issues it itself, signed with the lab's shared secret, and
  the data servers accept it; a macaroon one data server issued opens the file on another.
  A bearer token sent as `Authorization` is copied by the manager into the redirect's URL
  (`?authz=Bearer%20...`: `http.header2cgi Authorization authz`), so it reaches the data
  server, and any log of that URL.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.endpoints import source_name
from tests.servers.redirector_cluster import (
    ADDRESS,
    META,
    SITE_A,
    SITE_B,
    SOURCE,
    Cluster,
    running_cluster,
    write_file,
)

pytestmark = pytest.mark.lab

SIZE = 8 << 20
LOOKUP_DELAY = 1.0  # cms.delay lookup (CmsDelay's default): the wait before a retry
RETRIES = 3  # after the first 400; one was always enough here (see the docstring)
MANAGER_A, SERVERS_A = SITE_A[0].name, [p.name for p in SITE_A[1:]]
MANAGER_B, SERVER_B = SITE_B[0].name, SITE_B[1].name
SITE_B_FILE = source_name(4096)  # only site B's data server has it


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with running_cluster(SIZE) as cluster:
        write_file(cluster[SERVER_B], SITE_B_FILE, os.urandom(4096))
        _wait_for_redirect(cluster, MANAGER_B, SITE_B_FILE)
        yield cluster


def _client(cluster: Cluster, cert: bool = True, name: str = "orchestrator") -> httpx.Client:
    context = ssl.create_default_context(capath=str(cluster.ca.certdir))
    if cert:
        folder = cluster.ca.directory / "clients" / name
        context.load_cert_chain(folder / "usercert.pem", folder / "userkey.pem")
    return httpx.Client(verify=context, timeout=60)


def _wait_for_redirect(cluster: Cluster, manager: str, name: str, timeout: float = 30) -> None:
    """The manager redirects once its servers have logged in (cms.delay startup)."""
    deadline = time.monotonic() + timeout
    with _client(cluster) as client:
        while True:
            status = client.head(cluster[manager].url + "/" + name).status_code
            if status in (302, 307):  # GET: 302, HEAD: 307
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{manager} still answers {status} for {name}")
            time.sleep(0.5)


def _download_macaroon(cluster: Cluster, client: httpx.Client, url: str) -> str:
    response = client.post(
        url,
        json={"caveats": ["activity:DOWNLOAD"], "validity": "PT600S"},
        headers={"Content-Type": "application/macaroon-request"},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["macaroon"])


def _copy(
    client: httpx.Client,
    url: str,
    source_url: str,
    macaroon: str,
    extra: dict[str, str] | None = None,
) -> httpx.Response:
    headers = {
        "Source": source_url,
        "TransferHeaderAuthorization": f"Bearer {macaroon}",
        "Credential": "none",
        **(extra or {}),
    }
    return client.request("COPY", url, headers=headers)


def _holders(cluster: Cluster, servers: list[str], name: str) -> list[str]:
    return [s for s in servers if (cluster[s].data_root / name.lstrip("/")).exists()]


def _source_bytes(cluster: Cluster) -> bytes:
    return (cluster[SOURCE.name].data_root / source_name(SIZE).lstrip("/")).read_bytes()


def _pull_through(cluster: Cluster, name: str, head_first: bool) -> list[int]:
    """HTTPS COPY (pull) of the source to `name` sent to site A's manager, redirect followed;
    the status of every COPY sent, in order."""
    source = f"https://{ADDRESS}:{SOURCE.port + 50}/{source_name(SIZE)}"
    manager_url = cluster[MANAGER_A].url + "/" + name
    statuses = []
    with _client(cluster) as client:
        macaroon = _download_macaroon(cluster, client, source)
        if head_first:
            assert client.head(manager_url).status_code == 404
        for _ in range(RETRIES + 1):
            first = _copy(client, manager_url, source, macaroon)
            statuses.append(first.status_code)
            if first.status_code != 400:
                break
            assert "Failed to open local resource" in first.text
            time.sleep(LOOKUP_DELAY)
        assert first.status_code == 307, first.text
        location = first.headers["location"]
        assert location.startswith(f"https://{ADDRESS}:"), location
        started = time.monotonic()
        final = _copy(client, location, source, macaroon)
        statuses.append(final.status_code)
        print(f"{name}: {statuses} -> {location} in {time.monotonic() - started:.2f} s")
        assert final.status_code == 201 and "success: Created" in final.text, final.text
    return statuses


def test_https_copy_to_a_new_name_fails_first_then_lands_on_one_data_server(
    cluster: Cluster,
) -> None:
    name = "/tpcbench-redirected-pull"
    statuses = _pull_through(cluster, name, head_first=False)
    assert statuses[0] == 400 and statuses[-2:] == [307, 201]
    holders = _holders(cluster, SERVERS_A, name)
    assert len(holders) == 1
    landed = cluster[holders[0]].data_root / name.lstrip("/")
    assert landed.read_bytes() == _source_bytes(cluster)
    assert "event=REDIRECT" in cluster[MANAGER_A].log()


def test_a_head_of_the_new_name_first_avoids_the_failed_copy(cluster: Cluster) -> None:
    name = "/tpcbench-redirected-after-head"
    assert _pull_through(cluster, name, head_first=True) == [307, 201]
    (holder,) = _holders(cluster, SERVERS_A, name)
    assert (cluster[holder].data_root / name.lstrip("/")).read_bytes() == _source_bytes(cluster)


def test_a_copy_authorized_by_a_token_carries_it_through_the_redirect(cluster: Cluster) -> None:
    """Token mode (no client certificate): the destination macaroon, asked of the manager and
    sent as `Authorization`, comes back in the 307's URL (`?authz=Bearer%20...`), so following
    the Location without the header (as httpx does across origins) still opens the name."""
    name = "/tpcbench-redirected-token"
    source = f"https://{ADDRESS}:{SOURCE.port + 50}/{source_name(SIZE)}"
    destination = cluster[MANAGER_A].url + name
    with _client(cluster) as client:
        download = _download_macaroon(cluster, client, source)
        upload = client.post(
            destination,
            json={"caveats": ["activity:UPLOAD"], "validity": "PT600S"},
            headers={"Content-Type": "application/macaroon-request"},
        ).json()["macaroon"]
    statuses = []
    for _ in range(RETRIES + 1):
        with _client(cluster, cert=False) as anonymous:
            answer = _copy(
                anonymous, destination, source, download, {"Authorization": f"Bearer {upload}"}
            )
        statuses.append(answer.status_code)
        if answer.status_code != 400:
            break
        time.sleep(LOOKUP_DELAY)
    assert statuses[0] == 400 and statuses[-1] == 307, answer.text
    location = answer.headers["location"]
    assert "?authz=Bearer%20" in location
    with _client(cluster, cert=False) as anonymous:
        final = _copy(anonymous, location, source, download)
    assert final.status_code == 201 and "success: Created" in final.text, final.text
    (holder,) = _holders(cluster, SERVERS_A, name)
    assert (cluster[holder].data_root / name.lstrip("/")).read_bytes() == _source_bytes(cluster)


def test_site_to_site_pull_follows_the_source_managers_redirect_too(cluster: Cluster) -> None:
    """COPY to site B's manager, Source: site A's manager. The destination's TPC handler
    follows the source manager's 302 with the macaroon that manager issued; its perf marker
    names the source data server it read from (`RemoteConnections: tcp:host:port`)."""
    name, source_name_a = "/tpcbench-site-to-site", "/tpcbench-source-site-a"
    source_server = cluster[SERVERS_A[0]]
    write_file(source_server, source_name_a, os.urandom(SIZE))
    source = cluster[MANAGER_A].url + "/" + source_name_a
    destination = cluster[MANAGER_B].url + "/" + name
    with _client(cluster) as client:
        macaroon = _download_macaroon(cluster, client, source)
        statuses = []
        for _ in range(RETRIES + 1):
            answer = _copy(client, destination, source, macaroon)
            statuses.append(answer.status_code)
            if answer.status_code != 400:
                break
            time.sleep(LOOKUP_DELAY)
        assert statuses[0] == 400 and statuses[-1] == 307, answer.text
        final = _copy(client, answer.headers["location"], source, macaroon)
    assert final.status_code == 201 and "success: Created" in final.text, final.text
    assert f"RemoteConnections: tcp:{ADDRESS}:{source_server.plan.port}" in final.text
    landed = cluster[SERVER_B].data_root / name.lstrip("/")
    assert landed.read_bytes() == (source_server.data_root / source_name_a.lstrip("/")).read_bytes()


def test_a_push_to_a_destination_manager_needs_no_retry(cluster: Cluster) -> None:
    """COPY with Destination: site B's manager, sent to the source data server: its PUT to the
    manager is redirected and followed (about 2 s with the lookup), no 400 first."""
    name = "/tpcbench-pushed"
    destination = cluster[MANAGER_B].url + name
    source = f"https://{ADDRESS}:{SOURCE.port + 50}/{source_name(SIZE)}"
    with _client(cluster) as client:
        upload = client.post(
            destination,
            json={"caveats": ["activity:UPLOAD"], "validity": "PT600S"},
            headers={"Content-Type": "application/macaroon-request"},
        )
        assert upload.status_code == 200, upload.text
        answer = client.request(
            "COPY",
            source,
            headers={
                "Destination": destination,
                "TransferHeaderAuthorization": f"Bearer {upload.json()['macaroon']}",
                "Credential": "none",
            },
        )
    assert answer.status_code == 201 and "success: Created" in answer.text, answer.text
    landed = cluster[SERVER_B].data_root / name.lstrip("/")
    assert landed.read_bytes() == _source_bytes(cluster)


def test_root_tpc_through_the_manager(cluster: Cluster) -> None:
    name = "/tpcbench-redirected-root"
    creds = cluster.creds
    env = {
        **os.environ,
        "X509_USER_CERT": str(creds.cert),
        "X509_USER_KEY": str(creds.key),
        "X509_CERT_DIR": str(creds.certdir),
        "XrdSecGSICREATEPROXY": "0",
        "XrdSecGSISRVNAMES": "*",
        "XRD_LOGLEVEL": "Debug",
    }
    argv = [
        "xrdcp",
        "-f",
        "--tpc",
        "only",
        f"{cluster[SOURCE.name].root_url}/{source_name(SIZE)}",
        f"{cluster[MANAGER_A].root_url}/{name}",
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (holder,) = _holders(cluster, SERVERS_A, name)
    assert f"Redirected from: {cluster[MANAGER_A].root_url}/{name}" in done.stderr
    assert f"to: root://{ADDRESS}:{cluster[holder].plan.port}/" in done.stderr
    assert (cluster[holder].data_root / name.lstrip("/")).read_bytes() == _source_bytes(cluster)


def test_the_meta_manager_redirects_a_lookup_down_two_levels(cluster: Cluster) -> None:
    url = cluster[META.name].url + "/" + SITE_B_FILE
    hops = []
    with _client(cluster) as client:
        for _ in range(3):
            started = time.monotonic()
            response = client.get(url)
            hops.append((url, response.status_code, time.monotonic() - started))
            if response.status_code != 302:
                break
            url = response.headers["location"]
    print("hops:", [(u, s, f"{t * 1000:.0f} ms") for u, s, t in hops])
    assert [(u.split("/")[2], s) for u, s, _ in hops] == [
        (f"{ADDRESS}:{META.port}", 302),
        (f"{ADDRESS}:{SITE_B[0].port}", 302),
        (f"{ADDRESS}:{SITE_B[1].port}", 200),
    ]
    assert response.content == (cluster[SERVER_B].data_root / SITE_B_FILE.lstrip("/")).read_bytes()


def test_a_macaroon_asked_of_the_manager_is_its_own_and_opens_the_data_server(
    cluster: Cluster,
) -> None:
    url = cluster[MANAGER_B].url + "/" + SITE_B_FILE
    with _client(cluster) as client:
        macaroon = _download_macaroon(cluster, client, url)  # 200 from the manager: no 302
    direct = cluster[SERVER_B].url + "/" + SITE_B_FILE
    assert _anonymous_get(cluster, direct).status_code == 403
    assert _anonymous_get(cluster, direct, macaroon).status_code == 200
    # Through the manager the token rides in the redirect's URL.
    redirect = _anonymous_get(cluster, url, macaroon)
    assert redirect.status_code == 302
    assert "authz=Bearer%20" in redirect.headers["location"]


def _anonymous_get(cluster: Cluster, url: str, token: str | None = None) -> httpx.Response:
    """A GET on a connection of its own: XrdHttp keeps a connection's identity (below)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    with _client(cluster, cert=False) as anonymous:
        return anonymous.get(url, headers=headers)


def test_a_macaroon_of_one_data_server_opens_another_of_the_lab(cluster: Cluster) -> None:
    name = "/tpcbench-shared-secret"
    for server in SERVERS_A:
        write_file(cluster[server], name, server.encode())
    first, second = (cluster[s].url + name for s in SERVERS_A)
    with _client(cluster) as client:
        macaroon = _download_macaroon(cluster, client, first)
    opened = _anonymous_get(cluster, second, macaroon)
    assert opened.status_code == 200 and opened.content == SERVERS_A[1].encode()
    assert _anonymous_get(cluster, second, macaroon[:-4] + "AAAA").status_code == 403
    assert _anonymous_get(cluster, second).status_code == 403


def test_a_connection_keeps_the_identity_a_macaroon_gave_it(cluster: Cluster) -> None:
    """Pinned weakness of XrdHttp 5.5.3 (standalone servers too, not the redirector's): after
    one request authorized by a macaroon, later requests on the same keep-alive connection
    without any token are authorized as the macaroon's identity (its `name:` caveat, our
    orchestrator), with that identity's rights, beyond the macaroon's path and activity."""
    server = cluster[SERVERS_A[0]]
    for name in ("/tpcbench-kept-a", "/tpcbench-kept-b"):
        write_file(server, name, name.encode())
    with _client(cluster) as client:
        macaroon = _download_macaroon(cluster, client, server.url + "/tpcbench-kept-a")
    assert _anonymous_get(cluster, server.url + "/tpcbench-kept-b").status_code == 403
    with _client(cluster, cert=False) as anonymous:
        bearer = {"Authorization": f"Bearer {macaroon}"}
        assert anonymous.get(server.url + "/tpcbench-kept-a", headers=bearer).status_code == 200
        assert anonymous.get(server.url + "/tpcbench-kept-b").status_code == 200


def test_the_manager_refuses_before_it_redirects(cluster: Cluster) -> None:
    cluster.ca.issue_client("alice")  # our CA, not in the grid map
    url = cluster[MANAGER_B].url + "/" + SITE_B_FILE
    assert _anonymous_get(cluster, url).status_code == 403
    with _client(cluster, name="alice") as alice:
        assert alice.get(url).status_code == 403
    with _client(cluster) as client:
        assert client.get(cluster[MANAGER_B].url + "/elsewhere").status_code == 403
        assert client.get(url).status_code == 302


def test_cluster_logs_name_their_roles(cluster: Cluster) -> None:
    assert "XRDROLE:  manager" in cluster[MANAGER_A].log()
    assert "Configured as HTTP(s) redirector." in cluster[MANAGER_A].log()
    assert "Logged into" in cluster[SERVERS_A[0]].log("cmsd")
    assert Path(cluster[META.name].config).read_text().count("all.role meta manager") == 1

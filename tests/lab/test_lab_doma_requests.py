"""The requests of the DOMA HTTP-TPC smoke test (paulmillar/http-tpc-utils, bin/smoke-test.sh:
its script is not ours to copy), made with curl as it makes them, against a real 2-node lab of
its own, expecting its answers: upload, download and delete with X.509 (an RFC 3820 proxy of
the orchestrator's certificate) and with a token from the issuer's token endpoint; adler32 and
md5 by RFC 3230 HEAD and GET; a macaroon asked for and used; authorized third-party pull and
push; and the refusals of a secure-by-default server.

One difference from the script, pinned below: it sends `TransferHeaderAuthorization: bearer`,
which xrootd 5.5.3 refuses (the scheme matched case-sensitively), so the copies here send
RFC 6750's `Bearer`. docs/install.md ("Security") says who may do what.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import Endpoint, source_name
from orchestrator.lab import LabInventory, LabNetwork, start_lab, stop_lab
from tests.support.proxy import make_proxy
from tests.support.running_lab import make_home

pytestmark = pytest.mark.lab
NETWORK = LabNetwork(prefix="tpcdm", subnet_offset=90, base_port=27000)
FILE_SIZE = 4 << 20
SOURCE = source_name(FILE_SIZE)
PAYLOAD = Path("/bin/bash")  # what the smoke test uploads
DATA = PAYLOAD.read_bytes()
ADLER32 = f"{zlib.adler32(DATA):08x}"
MD5 = base64.b64encode(hashlib.md5(DATA).digest()).decode()
COPIED = "success: Created"


@dataclass(frozen=True)
class Lab:
    home: Path
    inventory: LabInventory
    proxy: Path  # the orchestrator's proxy, as the smoke test's -E/--cacert file
    alice_proxy: Path  # a proxy of another certificate of our CA
    stranger: tuple[Path, Path]  # another CA's certificate and key

    @property
    def certdir(self) -> Path:
        return self.inventory.client.certdir

    @property
    def nodes(self) -> tuple[Endpoint, Endpoint]:
        return self.inventory.nodes[0], self.inventory.nodes[1]

    @property
    def issuer(self) -> str:
        return str(self.inventory.token_issuer["url"])


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    home = make_home()
    try:
        ca = CertificateAuthority.init(home / "ca")
        other = CertificateAuthority.init(home / "other", subject="/DC=org/DC=else/CN=Other CA")
        inventory = start_lab(home, 2, FILE_SIZE, network=NETWORK)
        client, alice = inventory.client, ca.issue_client("alice")
        stranger = other.issue_client("orchestrator")
        yield Lab(
            home=home,
            inventory=inventory,
            proxy=make_proxy(client.cert, client.key, home / "x509up"),
            alice_proxy=make_proxy(alice.cert, alice.key, home / "alice-proxy"),
            stranger=(stranger.cert, stranger.key),
        )
    finally:
        stop_lab(home)
        shutil.rmtree(home, ignore_errors=True)


@dataclass(frozen=True, repr=False)
class Reply:
    code: int  # HTTP status; 0: no HTTP answer (curl's exit code in `exit`)
    body: bytes
    headers: dict[str, str]  # lower-case names, the last answer's (after -L)
    exit: int = 0
    errors: str = ""

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")

    @property
    def last_line(self) -> str:
        lines = self.text.strip().splitlines()
        return lines[-1] if lines else ""

    def digests(self) -> dict[str, str]:
        """RFC 3230 `Digest: adler32=..., md5=...` -> {"adler32": ..., "md5": ...}."""
        found = {}
        for item in self.headers.get("digest", "").split(","):
            name, sep, value = item.strip().partition("=")
            if sep:
                found[name.lower()] = value
        return found

    def __repr__(self) -> str:  # what an assertion shows: the status and the body's end
        tail = self.text.strip()[-300:]
        return f"<{self.code} (curl {self.exit}) {self.headers} {tail!r} {self.errors.strip()}>"


@dataclass(frozen=True)
class As:
    """Who makes a request: X.509 (a proxy file), a bearer token, or no one."""

    proxy: Path | None = None
    bearer: str | None = None


ANONYMOUS = As()


def curl(lab: Lab, who: As, *args: str) -> Reply:
    """One request as the smoke test makes it: --capath the trust directory, `X-No-Delegate`,
    -L; with X.509 `--cacert PROXY -E PROXY` and `Credential: none`; with a token
    `Authorization: Bearer`. (Not -f: the status code is asserted instead.)"""
    argv = ["curl", "-sS", "--connect-timeout", "60", "-m", "120", "-L",
            "--capath", str(lab.certdir), "-H", "X-No-Delegate: true"]  # fmt: skip
    if who.proxy is not None:
        argv += ["--cacert", str(who.proxy), "-E", str(who.proxy), "-H", "Credential: none"]
    if who.bearer is not None:
        argv += ["-H", f"Authorization: Bearer {who.bearer}"]
    with tempfile.TemporaryDirectory() as folder:
        head, body = Path(folder) / "headers", Path(folder) / "body"
        done = subprocess.run(
            [*argv, "-D", str(head), "-o", str(body), "-w", "%{http_code}", *args],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        headers: dict[str, str] = {}
        if head.exists():  # the last response's block (curl -L writes one per response)
            for line in head.read_text(errors="replace").splitlines():
                if line.startswith("HTTP/"):
                    headers = {}
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
        return Reply(
            int(done.stdout.strip() or 0),
            body.read_bytes() if body.exists() else b"",
            headers,
            done.returncode,
            done.stderr,
        )


def url(node: Endpoint, name: str) -> str:
    return f"https://{node.address}:{node.ports['https']}{name}"


def on_disk(node: Endpoint, name: str) -> Path:
    return Path(node.data_root) / name.lstrip("/")


def fresh(directory: str = "/tpcbench-smoke", stem: str = "smoke-test") -> str:
    """A name like the smoke test's `$URL/smoke-test-$(uname -n)-$$`, under the base URL."""
    return f"{directory}/{stem}-lab-{uuid.uuid4().hex[:12]}"


def macaroon(lab: Lab, target: str, activities: str) -> str:
    """The smoke test's macaroon request, made with the orchestrator's proxy."""
    body = json.dumps({"caveats": [f"activity:{activities}"], "validity": "PT30M"})
    reply = curl(
        lab, As(proxy=lab.proxy), "-X", "POST",
        "-H", "Content-Type: application/macaroon-request", "-d", body, target,
    )  # fmt: skip
    assert reply.code == 200, reply
    return str(json.loads(reply.body)["macaroon"])


def token_from_issuer(lab: Lab, proxy: Path, *form: str) -> Reply:
    """The smoke test's `-t scitoken`: the discovery document's token_endpoint, then a client
    credentials request with the proxy as TLS client certificate."""
    config = curl(lab, ANONYMOUS, lab.issuer + "/.well-known/openid-configuration")
    assert config.code == 200, config
    endpoint = json.loads(config.body)["token_endpoint"]
    assert endpoint == lab.issuer + "/token"
    return curl(
        lab, As(proxy=proxy), "-H", "Accept: application/json",
        "-H", "Content-Type: application/x-www-form-urlencoded",
        "-d", "grant_type=client_credentials", *form, "-X", "POST", endpoint,
    )  # fmt: skip


@pytest.fixture(scope="module")
def token(lab: Lab) -> str:
    reply = token_from_issuer(lab, lab.proxy)
    assert reply.code == 200, reply
    answer = json.loads(reply.body)
    assert answer["token_type"] == "Bearer" and 0 < answer["expires_in"] <= 1200
    activities = ("storage.read", "storage.create", "storage.modify")
    assert answer["scope"].split() == [f"{activity}:/tpcbench-smoke" for activity in activities]
    return str(answer["access_token"])


def upload_download_digest_delete(
    lab: Lab, who: As, name: str | None = None, extended: bool = False
) -> None:
    """The smoke test's direct tests for one credential on `name` (default: a fresh one) on
    the first node (`extended`: its -x digest tests)."""
    node, _ = lab.nodes
    name = name or fresh()
    target = url(node, name)
    put = curl(lab, who, "-T", str(PAYLOAD), target)
    assert put.code in (200, 201), put
    assert on_disk(node, name).read_bytes() == DATA
    got = curl(lab, who, target)
    assert (got.code, got.body == DATA) == (200, True), got
    head = curl(lab, who, "-I", "-H", "Want-Digest: adler32", target)
    assert (head.code, head.digests()) == (200, {"adler32": ADLER32}), head
    if extended:
        for method in (["-I"], []):
            single = curl(lab, who, *method, "-H", "Want-Digest: adler32", target)
            assert single.digests() == {"adler32": ADLER32}, (method, single)
            both = curl(lab, who, *method, "-H", "Want-Digest: adler32,md5", target)
            assert both.code == 200 and both.digests(), (method, both)
            assert both.digests().items() <= {"adler32": ADLER32, "md5": MD5}.items(), both
            assert method or both.body == DATA
        md5 = curl(lab, who, "-I", "-H", "Want-Digest: md5", target)
        assert md5.digests() == {"md5": MD5}, md5
    deleted = curl(lab, who, "-X", "DELETE", target)
    assert deleted.code in (200, 204), deleted
    assert not on_disk(node, name).exists()
    assert curl(lab, who, "-I", target).code == 404


def test_upload_download_digests_and_delete_with_x509(lab: Lab) -> None:
    upload_download_digest_delete(lab, As(proxy=lab.proxy), extended=True)


def test_upload_download_digest_and_delete_with_a_token_from_the_issuer(
    lab: Lab, token: str
) -> None:
    upload_download_digest_delete(lab, As(bearer=token))


def test_a_macaroon_asked_for_and_used(lab: Lab) -> None:
    node, _ = lab.nodes
    name = fresh()  # the macaroon names the file's path, asked before the upload
    mac = macaroon(lab, url(node, name), "DOWNLOAD,UPLOAD,DELETE,LIST")
    upload_download_digest_delete(lab, As(bearer=mac), name)


def target_credential(lab: Lab, kind: str, target: str, token: str) -> As:
    """The credential the smoke test gives the COPY's own server: X.509, or its token type."""
    if kind == "x509":
        return As(proxy=lab.proxy)
    if kind == "macaroon":
        return As(bearer=macaroon(lab, target, "DOWNLOAD,UPLOAD,DELETE,LIST"))
    return As(bearer=token)


@pytest.mark.parametrize("kind", ["x509", "macaroon", "token"])
def test_third_party_pull_of_the_other_nodes_private_file(lab: Lab, token: str, kind: str) -> None:
    node, other = lab.nodes
    name = fresh()
    target = url(node, name)
    source = macaroon(lab, url(other, SOURCE), "DOWNLOAD")  # requestRemoteMacaroon
    who = target_credential(lab, kind, target, token)
    copy = curl(
        lab, who, "-X", "COPY", "-H", f"TransferHeaderAuthorization: Bearer {source}",
        "-H", f"Source: {url(other, SOURCE)}", target,
    )  # fmt: skip
    assert (copy.code, copy.last_line) == (201, COPIED), copy
    assert on_disk(node, name).read_bytes() == on_disk(other, SOURCE).read_bytes()
    assert curl(lab, who, "-X", "DELETE", target).code in (200, 204)
    assert not on_disk(node, name).exists()


@pytest.mark.parametrize("kind", ["x509", "macaroon", "token"])
def test_third_party_push_to_the_other_node(lab: Lab, token: str, kind: str) -> None:
    node, other = lab.nodes
    x509 = As(proxy=lab.proxy)
    name, pushed = fresh(), fresh("/tpcbench-smoke-push", "smoke-test-push")
    target = url(node, name)
    assert curl(lab, x509, "-T", str(PAYLOAD), target).code in (200, 201)
    upload = macaroon(lab, url(other, pushed), "UPLOAD,DELETE")  # requestRemoteMacaroon
    who = target_credential(lab, kind, target, token)
    copy = curl(
        lab, who, "-X", "COPY", "-H", f"TransferHeaderAuthorization: Bearer {upload}",
        "-H", f"Destination: {url(other, pushed)}", target,
    )  # fmt: skip
    assert (copy.code, copy.last_line) == (201, COPIED), copy
    assert on_disk(other, pushed).read_bytes() == DATA
    assert curl(lab, x509, "-X", "DELETE", url(other, pushed)).code in (200, 204)
    assert curl(lab, x509, "-X", "DELETE", target).code in (200, 204)
    assert not on_disk(other, pushed).exists() and not on_disk(node, name).exists()


def test_xrootd_refuses_the_smoke_tests_lowercase_bearer(lab: Lab) -> None:
    """bin/smoke-test.sh sends `TransferHeaderAuthorization: bearer <macaroon>`; xrootd 5.5.3
    passes it on, and the source refuses it (it takes `Bearer` only). The copy fails and leaves
    an empty file. If this fails, xrootd now takes the script's spelling: send it above."""
    node, other = lab.nodes
    name = fresh()
    x509 = As(proxy=lab.proxy)
    source = macaroon(lab, url(other, SOURCE), "DOWNLOAD")
    copy = curl(
        lab, x509, "-X", "COPY", "-H", f"TransferHeaderAuthorization: bearer {source}",
        "-H", f"Source: {url(other, SOURCE)}", url(node, name),
    )  # fmt: skip
    assert copy.code == 201, copy
    assert copy.last_line.startswith("failure: Remote side failed with status code 403"), copy
    curl(lab, x509, "-X", "DELETE", url(node, name))
    assert not on_disk(node, name).exists()


def test_anonymous_upload_delete_and_copies_are_refused(lab: Lab) -> None:
    node, other = lab.nodes
    planted, name, pushed = fresh(), fresh(), fresh("/tpcbench-smoke-push", "smoke-test-push")
    x509 = As(proxy=lab.proxy)
    assert curl(lab, x509, "-T", str(PAYLOAD), url(node, planted)).code in (200, 201)
    answers = {
        "upload": curl(lab, ANONYMOUS, "-T", str(PAYLOAD), url(node, name)),
        "delete": curl(lab, ANONYMOUS, "-X", "DELETE", url(node, planted)),
        "pull": curl(lab, ANONYMOUS, "-X", "COPY", "-H", f"Source: {url(other, SOURCE)}",
                     url(node, name)),
        "push": curl(lab, ANONYMOUS, "-X", "COPY", "-H", f"Destination: {url(other, pushed)}",
                     url(node, planted)),
    }  # fmt: skip
    for what, reply in answers.items():
        assert reply.code in (401, 403), (what, reply)
    assert not on_disk(node, name).exists() and not on_disk(other, pushed).exists()
    assert on_disk(node, planted).read_bytes() == DATA
    assert curl(lab, x509, "-X", "DELETE", url(node, planted)).code in (200, 204)


def test_a_macaroon_opens_nothing_beyond_the_orchestrators_rights(lab: Lab) -> None:
    """The server issues a macaroon to the orchestrator for any name, capped at its rights:
    outside the benchmark's names, and over the source file, it opens nothing."""
    node, _ = lab.nodes
    elsewhere = f"/elsewhere-{uuid.uuid4().hex[:12]}"
    mac = macaroon(lab, url(node, elsewhere), "UPLOAD,DELETE")
    assert curl(lab, As(bearer=mac), "-T", str(PAYLOAD), url(node, elsewhere)).code == 403
    assert not on_disk(node, elsewhere).exists()
    mac = macaroon(lab, url(node, SOURCE), "DOWNLOAD,UPLOAD,DELETE")
    assert curl(lab, As(bearer=mac), "-T", str(PAYLOAD), url(node, SOURCE)).code == 403
    assert curl(lab, As(bearer=mac), "-X", "DELETE", url(node, SOURCE)).code == 403
    assert on_disk(node, SOURCE).stat().st_size == FILE_SIZE


def test_the_token_endpoint_gives_strangers_nothing(lab: Lab) -> None:
    alice = token_from_issuer(lab, lab.alice_proxy)
    assert alice.code == 401 and json.loads(alice.body)["error"] == "invalid_client", alice
    anonymous = curl(lab, ANONYMOUS, "-d", "grant_type=client_credentials", lab.issuer + "/token")
    assert anonymous.code == 401 and json.loads(anonymous.body)["error"] == "invalid_client"
    cert, key = lab.stranger  # another CA's: the TLS handshake fails, no HTTP answer
    other = curl(lab, ANONYMOUS, "-E", str(cert), "--key", str(key),
                 "-d", "grant_type=client_credentials", lab.issuer + "/token")  # fmt: skip
    assert other.code == 0 and other.exit != 0, other
    for scope in (f"storage.create:{SOURCE}", "storage.read:/", "openid"):
        beyond = token_from_issuer(lab, lab.proxy, "--data-urlencode", f"scope={scope}")
        assert beyond.code == 400 and json.loads(beyond.body)["error"] == "invalid_scope", beyond


def test_a_token_opens_its_scope_and_nothing_else(lab: Lab, token: str) -> None:
    """The default token opens names under /tpcbench-smoke (xrootd 5.5.3 reads a scope's path
    as a bare prefix, `/tpcbench-smokey` too, which the endpoint's rights check allows for);
    not another benchmark name, not the source; a token minted for one server's audience opens
    that server only."""
    node, other = lab.nodes
    who = As(bearer=token)
    elsewhere = "/tpcbench-x-" + uuid.uuid4().hex[:12]
    assert curl(lab, who, "-T", str(PAYLOAD), url(node, elsewhere)).code == 403
    assert not on_disk(node, elsewhere).exists()
    assert curl(lab, who, "-r", "0-9", url(node, SOURCE)).code == 403
    prefixed = "/tpcbench-smokey-" + uuid.uuid4().hex[:12]
    assert curl(lab, who, "-T", str(PAYLOAD), url(node, prefixed)).code in (200, 201)
    assert curl(lab, who, "-X", "DELETE", url(node, prefixed)).code in (200, 204)
    origin = url(node, "")
    reply = token_from_issuer(
        lab, lab.proxy, "--data-urlencode", f"scope=storage.read:{SOURCE}",
        "--data-urlencode", f"audience={origin}",
    )  # fmt: skip
    assert reply.code == 200, reply
    reader = As(bearer=json.loads(reply.body)["access_token"])
    assert curl(lab, reader, "-r", "0-9", url(node, SOURCE)).code == 206
    assert curl(lab, reader, "-r", "0-9", url(other, SOURCE)).code in (401, 403)

"""Secure by default, on a running lab's real servers: over HTTPS, root:// and GridFTP, an
anonymous client, a certificate of another CA, a certificate of ours that is not the
orchestrator's and a host's certificate cannot write, overwrite, delete, list or copy; the
orchestrator can do exactly what a measurement needs (its measurements at 1 and 8 streams
for every protocol: test_lab_phases.py). Token mode: the token area refuses the same without
a valid token. (docs/install.md, "Security".)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ca.authority import CertificateAuthority
from orchestrator.endpoints import Endpoint, in_token_area, source_name
from tests.support.refusals import (
    Client,
    gsi_env,
    gsiftp_url,
    http_copy,
    http_delete,
    http_list,
    http_put,
    https_url,
    macaroon,
    root_url,
    run,
)
from tests.support.running_lab import TEST_FILE_SIZE, RunningLab

pytestmark = pytest.mark.lab
SOURCE = source_name(TEST_FILE_SIZE)
STRANGERS = ("anonymous", "other-ca", "ours-not-orchestrator", "host")


@pytest.fixture(scope="module")
def clients(running_lab: RunningLab, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every identity, with the CA directory each trusts (ours: all verify our servers)."""
    base = tmp_path_factory.mktemp("identities")
    ours = running_lab.inventory.client
    other = CertificateAuthority.init(base / "other-ca", subject="/DC=org/DC=elsewhere/CN=Other CA")
    stranger = other.issue_client("tpcbench-orchestrator")  # even under the same name
    alice = running_lab.ca.issue_client("alice")
    # Globus clients insist on reading a key their user owns: a copy of lab-3's
    host = base / "host"
    host.mkdir()
    node_pki = running_lab.home / "lab" / "nodes" / "lab-3" / "pki"
    for name in ("hostcert.pem", "hostkey.pem"):
        (host / name).write_bytes((node_pki / name).read_bytes())
        (host / name).chmod(0o600)
    return {
        "anonymous": Client("anonymous", None, None, ours.certdir),
        "other-ca": Client("other-ca", stranger.cert, stranger.key, ours.certdir),
        "ours-not-orchestrator": Client("alice", alice.cert, alice.key, ours.certdir),
        "host": Client("host", host / "hostcert.pem", host / "hostkey.pem", ours.certdir),
        "orchestrator": Client("orchestrator", ours.cert, ours.key, ours.certdir),
    }


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    path = tmp_path / "payload"
    path.write_bytes(b"not from the orchestrator\n")
    return path


@pytest.fixture
def nodes(running_lab: RunningLab) -> tuple[Endpoint, Endpoint]:
    return running_lab.inventory.nodes[0], running_lab.inventory.nodes[1]


def on_disk(node: Endpoint, name: str) -> Path:
    return Path(node.data_root) / name.lstrip("/")


def refused_http(code: int) -> bool:
    """403/401, or no HTTP at all: the TLS handshake refused the certificate (curl: 000)."""
    return code in (0, 401, 403)


@pytest.fixture
def planted(nodes: tuple[Endpoint, Endpoint], clients: dict) -> Iterator[str]:
    """A benchmark destination file the orchestrator wrote, for the others to try on."""
    name = f"/tpcbench-planted-{uuid.uuid4().hex}"
    dst = nodes[1]
    source = on_disk(nodes[0], SOURCE)
    assert http_put(clients["orchestrator"], https_url(dst, name), source).code in (200, 201)
    yield name
    http_delete(clients["orchestrator"], https_url(dst, name))


@pytest.mark.parametrize("who", STRANGERS)
def test_https_refuses_writes_deletes_overwrites_listings_and_copies(
    nodes: tuple[Endpoint, Endpoint], clients: dict, payload: Path, planted: str, who: str
) -> None:
    src, dst = nodes
    client = clients[who]
    fresh = f"/tpcbench-{who}-{uuid.uuid4().hex}"
    answers = {
        "write": http_put(client, https_url(dst, fresh), payload),
        "overwrite": http_put(client, https_url(dst, planted), payload),
        "overwrite source": http_put(client, https_url(src, SOURCE), payload),
        "delete": http_delete(client, https_url(dst, planted)),
        "list": http_list(client, https_url(dst, "/")),
        "copy": http_copy(client, https_url(src, SOURCE), https_url(dst, fresh)),
    }
    for what, answer in answers.items():
        assert refused_http(answer.code), f"{who} {what}: {answer}"
    assert not on_disk(dst, fresh).exists()
    assert on_disk(dst, planted).read_bytes() == on_disk(src, SOURCE).read_bytes()
    assert on_disk(src, SOURCE).stat().st_size == TEST_FILE_SIZE


def test_https_the_orchestrator_may_not_list_or_touch_other_names(
    nodes: tuple[Endpoint, Endpoint], clients: dict, payload: Path
) -> None:
    src, dst = nodes
    orchestrator = clients["orchestrator"]
    assert http_list(orchestrator, https_url(dst, "/")).code == 403
    assert (
        http_put(orchestrator, https_url(dst, f"/elsewhere-{uuid.uuid4().hex}"), payload).code
        == 403
    )
    assert http_put(orchestrator, https_url(src, SOURCE), payload).code == 403


def test_a_macaroon_carries_only_the_rights_of_whoever_asked(
    nodes: tuple[Endpoint, Endpoint], clients: dict
) -> None:
    """The server issues a macaroon to anyone, capped at the asker's own rights: a stranger's
    cannot read the source, the orchestrator's can, and neither lets anyone write there."""
    src, dst = nodes
    url = https_url(src, SOURCE)
    for who in ("anonymous", "ours-not-orchestrator"):
        theirs = macaroon(clients[who], url, "DOWNLOAD")
        answer = http_copy(
            clients["orchestrator"], url, https_url(dst, f"/tpcbench-m-{uuid.uuid4().hex}"),
            f"TransferHeaderAuthorization: Bearer {theirs}",
        )  # fmt: skip
        verdict = answer.body.rstrip().splitlines()[-1]
        assert verdict.startswith("failure: Remote side failed with status code 403"), answer
    ours = macaroon(clients["orchestrator"], url, "DOWNLOAD,UPLOAD")
    target = f"/tpcbench-m-{uuid.uuid4().hex}"
    copied = http_copy(
        clients["orchestrator"], url, https_url(dst, target),
        f"TransferHeaderAuthorization: Bearer {ours}",
    )  # fmt: skip
    assert copied.body.rstrip().endswith("success: Created"), copied
    # UPLOAD was beyond the orchestrator's own rights on the source: not in its macaroon
    overwrite = http_put(clients["anonymous"], url, on_disk(dst, target), bearer=ours)
    assert overwrite.code == 403, overwrite
    http_delete(clients["orchestrator"], https_url(dst, target))


@pytest.mark.parametrize("who", STRANGERS)
def test_root_refuses_logins_writes_deletes_and_listings(
    nodes: tuple[Endpoint, Endpoint], clients: dict, payload: Path, planted: str, who: str
) -> None:
    src, dst = nodes
    env = gsi_env(clients[who], "lab-*")
    fresh = f"/tpcbench-{who}-{uuid.uuid4().hex}"
    answers = {
        "write": run(["xrdcp", "-f", str(payload), root_url(dst, fresh)], env),
        "overwrite": run(["xrdcp", "-f", str(payload), root_url(dst, planted)], env),
        "delete": run(["xrdfs", root_url(dst), "rm", planted], env),
        "list": run(["xrdfs", root_url(dst), "ls", "/"], env),
        "copy": run(
            ["xrdcp", "--tpc", "only", "-f", root_url(src, SOURCE), root_url(dst, fresh)], env
        ),
    }
    # a host of ours logs in (it reads sources for TPC) but may do nothing else
    expected = "permission denied" if who == "host" else "Auth failed"
    for what, answer in answers.items():
        assert answer.code != 0 and expected in answer.text, f"{who} {what}: {answer}"
    assert not on_disk(dst, fresh).exists()
    assert on_disk(dst, planted).read_bytes() == on_disk(src, SOURCE).read_bytes()


def test_root_the_orchestrator_may_not_list_or_remove_the_source(
    nodes: tuple[Endpoint, Endpoint], clients: dict
) -> None:
    src, _ = nodes
    env = gsi_env(clients["orchestrator"], "lab-*")
    for argv in (["ls", "/"], ["rm", SOURCE]):
        answer = run(["xrdfs", root_url(src), *argv], env)
        assert answer.code != 0 and "permission denied" in answer.text, answer
    assert on_disk(src, SOURCE).exists()


@pytest.mark.parametrize("who", STRANGERS)
def test_gridftp_refuses_everyone_but_the_orchestrator(
    nodes: tuple[Endpoint, Endpoint], clients: dict, payload: Path, who: str
) -> None:
    src, dst = nodes
    env = gsi_env(clients[who], "*")
    target = on_disk(dst, f"tpcbench-gridftp-{who}")
    client = clients[who]
    answers = {
        "write": run(
            ["globus-url-copy", f"file://{payload}", gsiftp_url(dst, target, client)], env
        ),
        "copy": run(
            [
                "globus-url-copy",
                "-nodcau",
                gsiftp_url(src, on_disk(src, SOURCE), client),
                gsiftp_url(dst, target, client),
            ],
            env,
        ),
        "list": run(
            ["globus-url-copy", "-list", gsiftp_url(dst, f"{dst.data_root}/", client)], env
        ),
    }
    for what, answer in answers.items():
        assert answer.code != 0, f"{who} {what}: {answer}"
        assert "530" in answer.text or "authenticat" in answer.text.lower(), (
            f"{who} {what}: {answer}"
        )
    assert not target.exists()


def test_gridftp_the_orchestrator_may_not_list_or_overwrite_the_source(
    nodes: tuple[Endpoint, Endpoint], clients: dict, payload: Path
) -> None:
    src, _ = nodes
    env = gsi_env(clients["orchestrator"], "*")
    listing = run(["globus-url-copy", "-list", gsiftp_url(src, f"{src.data_root}/")], env)
    assert listing.code != 0 and "Command not supported" in listing.text, listing
    source = on_disk(src, SOURCE)
    overwrite = run(["globus-url-copy", f"file://{payload}", gsiftp_url(src, source)], env)
    assert overwrite.code != 0 and "Permission denied" in overwrite.text, overwrite
    assert source.stat().st_size == TEST_FILE_SIZE


@pytest.mark.parametrize("who", [*STRANGERS, "orchestrator"])
def test_the_token_area_refuses_everything_without_a_token(
    nodes: tuple[Endpoint, Endpoint], clients: dict, payload: Path, who: str
) -> None:
    """A certificate, even the orchestrator's, opens nothing there; only a token does
    (test_lab_tokens.py: with one, and with bad ones)."""
    src, dst = nodes
    client = clients[who]
    source = in_token_area(SOURCE)
    fresh = in_token_area(f"/tpcbench-{who}-{uuid.uuid4().hex}")
    answers = {
        "write": http_put(client, https_url(dst, fresh), payload),
        "overwrite source": http_put(client, https_url(src, source), payload),
        "delete source": http_delete(client, https_url(src, source)),
        "list": http_list(client, https_url(src, "/tokens/")),
        "copy": http_copy(client, https_url(src, source), https_url(dst, fresh)),
    }
    for what, answer in answers.items():
        assert refused_http(answer.code), f"{who} {what}: {answer}"
    assert not on_disk(dst, fresh).exists()
    assert on_disk(src, source).stat().st_size == TEST_FILE_SIZE

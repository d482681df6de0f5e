"""What a lab's real Kubernetes nodes run (scripts/kubenode/build.sh, images/lab/): kubelet and
kube-proxy of the control plane's release (and kubectl, for users), CoreDNS, the pod
sandbox's pause image, and the chart's bundled PostgreSQL, which must honour
docker.io/library/postgres's contract the way charts/tpc-bench/templates/database.yaml runs
it (uid 999, fsGroup volume, POSTGRES_*).

Containers that need a network get a fresh namespace of their own (`ip netns add`) holding
only a private address: nothing on the host's side changes. Clients reach them from inside it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.lab.podman_runtime import DEFAULT_IMAGE_PREFIX, IMAGE_PREFIX_ENV, podman
from tests.support.podman import run_podman

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "kubenode" / "build.sh"
K8S_VERSION = "v1.31.4"
COREDNS_VERSION = "1.11.3"
PREFIX = os.environ.get(IMAGE_PREFIX_ENV, DEFAULT_IMAGE_PREFIX).rstrip("/")
PAUSE = f"{PREFIX}/pause:3.10"
COREDNS = f"{PREFIX}/coredns:{COREDNS_VERSION}"
POSTGRES = f"{PREFIX}/postgres:15"
NS_ADDRESS = "10.123.45.67"  # only ever inside a namespace of the test's own
CAP_NET_BIND_SERVICE = 10
PG_ENV = {"POSTGRES_USER": "tpcbench", "POSTGRES_DB": "tpcbench", "POSTGRES_PASSWORD": "s3cret!"}
PG_DATA = "/var/lib/postgresql/data"
PG_ISREADY = ("pg_isready", "-U", "tpcbench", "-d", "tpcbench", "-h", "127.0.0.1")  # the chart's


@pytest.fixture(scope="module")
def kubenode() -> Path:
    """The cache directory of scripts/kubenode/build.sh (binaries in bin/), its images built;
    `make test` builds them first, so here the script only confirms they are current."""
    result = subprocess.run(
        [str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=3600, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"scripts/kubenode/build.sh failed:\n{result.stderr[-4000:]}")
    return Path(result.stdout.split()[-1])


def run(*command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return result


def image_config(image: str) -> dict:
    return json.loads(run_podman("image", "inspect", image).stdout)[0]["Config"]


def container_state(name: str) -> dict:
    return json.loads(run_podman("inspect", name).stdout)[0]["State"]


def remove_container(name: str) -> None:
    podman("rm", "--force", "--time", "0", name)


@contextmanager
def namespace() -> Iterator[str]:
    """A fresh network namespace: loopback up, with NS_ADDRESS (not 127/8) on it too."""
    name = f"tpcbench-labimg-{uuid.uuid4().hex[:8]}"
    run("ip", "netns", "add", name)
    try:
        run("ip", "-n", name, "link", "set", "lo", "up")
        run("ip", "-n", name, "address", "add", f"{NS_ADDRESS}/32", "dev", "lo")
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], capture_output=True, check=False)


def in_namespace(ns: str, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Python code run (by the test's own interpreter, psycopg at hand) inside namespace ns."""
    return subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_lab_dockerfile_is_hadolint_clean() -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    dockerfile = REPO / "images" / "lab" / "Dockerfile"
    result = subprocess.run(
        [str(hadolint), "--no-color", str(dockerfile)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- kubelet, kube-proxy, CoreDNS ---------------------------------------------------------


@pytest.mark.parametrize("program", ["kubelet", "kube-proxy"])
def test_kubelet_and_kube_proxy_are_the_control_planes_release(
    kubenode: Path, program: str
) -> None:
    out = run(str(kubenode / "bin" / program), "--version").stdout
    assert out.strip() == f"Kubernetes {K8S_VERSION}"


def test_kubectl_for_users_is_the_same_release(kubenode: Path) -> None:
    out = run(str(kubenode / "bin" / "kubectl"), "version", "--client").stdout
    assert out.splitlines()[0] == f"Client Version: {K8S_VERSION}"


def test_coredns_is_the_release_kubernetes_1_31_ships_and_static(kubenode: Path) -> None:
    assert f"CoreDNS-{COREDNS_VERSION}" in run(str(kubenode / "bin" / "coredns"), "-version").stdout
    # The image holds nothing but the binary: it runs only if that is static.
    out = run_podman("run", "--rm", "--network", "none", COREDNS, "-version").stdout
    assert f"CoreDNS-{COREDNS_VERSION}" in out
    config = image_config(COREDNS)
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["/coredns"]


def layer_member(archive: Path, work: Path, path: str) -> tarfile.TarInfo:
    """The entry for `path` in the single-manifest OCI archive's layers (the last one wins)."""
    with tarfile.open(archive) as oci:
        oci.extractall(work, filter="tar")
    blob = work / "blobs" / "sha256"
    index = json.loads((work / "index.json").read_text())
    manifest = json.loads((blob / index["manifests"][0]["digest"].split(":")[1]).read_text())
    found = None
    for layer in manifest["layers"]:
        with tarfile.open(blob / layer["digest"].split(":")[1], "r:*") as tar:
            for member in tar:
                if member.name.lstrip("./") == path.lstrip("/"):
                    found = member
    assert found is not None, f"{path} is in no layer of {archive}"
    return found


def test_coredns_keeps_its_bind_capability_in_the_archive_containerd_imports(
    kubenode: Path, tmp_path: Path
) -> None:
    """containerd gets the image as an OCI archive (podman save): the file capability that
    lets uid 65532 bind port 53 must be in the layer, as a PAX xattr."""
    archive = tmp_path / "coredns.tar"
    run_podman("save", "--format", "oci-archive", "--output", str(archive), COREDNS)
    member = layer_member(archive, tmp_path / "oci", "/coredns")
    raw = member.pax_headers.get("SCHILY.xattr.security.capability")
    assert raw is not None, member.pax_headers
    data = raw.encode("utf-8", "surrogateescape")
    magic = int.from_bytes(data[0:4], "little")
    permitted = int.from_bytes(data[4:8], "little")
    assert magic & 0xFF000000 in (0x02000000, 0x03000000)  # VFS_CAP_REVISION_2 or _3
    assert magic & 1  # effective
    assert permitted == 1 << CAP_NET_BIND_SERVICE


DNS_QUERY = """
import socket, struct, sys
header = struct.pack(">HHHHHH", 0x7462, 0x0100, 1, 0, 0, 0)  # id, recursion desired, 1 question
query = header + b"\\x07example\\x03org\\x00" + struct.pack(">HH", 1, 1)  # A, IN
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(5)
sock.sendto(query, (sys.argv[1], 53))
reply = sock.recv(512)
ident, flags = struct.unpack(">HH", reply[:4])
print(hex(ident), flags >> 15, flags & 0xF)
"""


def test_coredns_serves_port_53_as_65532_with_only_net_bind_service(
    kubenode: Path, eventually: Callable[..., object]
) -> None:
    """As a pod runs it: non-root, every capability but NET_BIND_SERVICE dropped, no new
    privileges, read-only root. Without a Corefile CoreDNS answers on :53 (plugin whoami)."""
    name = f"tpcbench-labimg-coredns-{uuid.uuid4().hex[:8]}"
    with namespace() as ns:
        try:
            run_podman(
                "run", "--detach", "--name", name, "--network", f"ns:/run/netns/{ns}",
                "--cap-drop", "ALL", "--cap-add", "NET_BIND_SERVICE",
                "--security-opt", "no-new-privileges", "--read-only", COREDNS,
            )  # fmt: skip
            reply = eventually(
                lambda: in_namespace(ns, DNS_QUERY, NS_ADDRESS),
                lambda result: result.returncode == 0,
                "CoreDNS answering on port 53",
                timeout=60,
            )
            assert reply.stdout.split() == ["0x7462", "1", "0"]  # our id, a reply, NOERROR
            assert container_state(name)["Running"]
            run_podman("stop", "--time", "10", name)
            assert container_state(name)["ExitCode"] == 0
        finally:
            remove_container(name)


# --- pause ----------------------------------------------------------------------------------


def test_pause_is_static_and_stops_at_once_on_sigterm(
    kubenode: Path, eventually: Callable[..., object]
) -> None:
    assert run(str(kubenode / "bin" / "pause"), "-v").stdout.strip() == "pause.c tpc-bench 3.10"
    config = image_config(PAUSE)
    assert config["Entrypoint"] == ["/pause"]
    assert config["User"] == "65535:65535"
    name = f"tpcbench-labimg-pause-{uuid.uuid4().hex[:8]}"
    try:
        run_podman("run", "--detach", "--name", name, "--network", "none", PAUSE)
        eventually(lambda: container_state(name)["Running"], bool, "pause running", timeout=30)
        start = time.monotonic()
        run_podman("stop", "--time", "20", name)  # SIGTERM, SIGKILL only after 20 s
        elapsed = time.monotonic() - start
        state = container_state(name)
        assert state["ExitCode"] == 0, state  # 137 would be SIGKILL
        assert elapsed < 10, elapsed
    finally:
        remove_container(name)


# --- postgres -------------------------------------------------------------------------------


@dataclass
class Database:
    ns: str
    data: Path  # the volume (host side), mounted at PG_DATA
    eventually: Callable[..., object]
    container: str = ""

    def start(self) -> None:
        self.container = f"tpcbench-labimg-postgres-{uuid.uuid4().hex[:8]}"
        env = [f"--env={key}={value}" for key, value in PG_ENV.items()]
        run_podman(
            "run", "--detach", "--name", self.container,
            "--network", f"ns:/run/netns/{self.ns}",
            "--user", "999:999", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--volume", f"{self.data}:{PG_DATA}", "--tmpfs", "/var/run/postgresql:rw,size=16m",
            *env, f"--env=PGDATA={PG_DATA}/pgdata", POSTGRES,
        )  # fmt: skip
        self.eventually(self.ready, bool, f"postgres in {self.container} ready", timeout=180)

    def ready(self) -> bool:
        if not container_state(self.container)["Running"]:
            logs = podman("logs", self.container)
            pytest.fail(f"postgres exited:\n{logs.stdout}{logs.stderr}")
        return podman("exec", self.container, *PG_ISREADY).returncode == 0

    def stop(self) -> float:
        start = time.monotonic()
        run_podman("stop", "--time", "30", self.container)
        elapsed = time.monotonic() - start
        state = container_state(self.container)
        assert state["ExitCode"] == 0, state
        remove_container(self.container)
        return elapsed

    def client(self, sql: str, password: str = PG_ENV["POSTGRES_PASSWORD"]) -> list:
        """Rows of sql, through psycopg over TCP to the namespace's non-loopback address."""
        result = in_namespace(self.ns, PSQL_CLIENT, NS_ADDRESS, password, sql)
        if result.returncode != 0:
            raise ConnectionError(result.stderr.strip().splitlines()[-1])
        return json.loads(result.stdout)


PSQL_CLIENT = """
import json, sys, psycopg
host, password, sql = sys.argv[1:]
with psycopg.connect(host=host, port=5432, user="tpcbench", password=password,
                     dbname="tpcbench", connect_timeout=10) as conn:
    cur = conn.execute(sql)
    print(json.dumps(cur.fetchall() if cur.description else [], default=str))
"""


@pytest.fixture(scope="module")
def database(
    kubenode: Path, tmp_path_factory: pytest.TempPathFactory, eventually: Callable[..., object]
) -> Iterator[Database]:
    """The image as the chart runs it: uid 999, capabilities dropped, a volume that only
    group 999 may write (what fsGroup gives), PGDATA a subdirectory of it, a memory-backed
    socket directory; its own network namespace, the default port."""
    data = tmp_path_factory.mktemp("pgvolume")
    os.chown(data, 0, 999)
    os.chmod(data, 0o2775)
    with namespace() as ns:
        database = Database(ns=ns, data=data, eventually=eventually)
        try:
            database.start()
            yield database
        finally:
            if database.container:
                remove_container(database.container)
            shutil.rmtree(data, ignore_errors=True)


def test_postgres_is_ready_as_the_chart_probes_it(database: Database) -> None:
    probe = run_podman("exec", database.container, *PG_ISREADY)
    assert "accepting connections" in probe.stdout
    out = run_podman("exec", database.container, "sh", "-c", "id -u; id -g; command -v pg_isready")
    assert out.stdout.split() == ["999", "999", "/usr/lib/postgresql/15/bin/pg_isready"]
    config = image_config(POSTGRES)
    assert config["User"] == "999:999"
    pgdata = database.data / "pgdata"
    assert pgdata.stat().st_uid == 999
    assert pgdata.stat().st_mode & 0o777 == 0o700


def test_postgres_takes_the_password_over_tcp_and_refuses_a_wrong_one(database: Database) -> None:
    rows = database.client(
        "SELECT current_user, current_database(), host(inet_client_addr()),"
        " current_setting('listen_addresses'), current_setting('password_encryption')"
    )
    assert rows == [["tpcbench", "tpcbench", NS_ADDRESS, "*", "scram-sha-256"]]
    with pytest.raises(ConnectionError, match="password authentication failed"):
        database.client("SELECT 1", password="not-the-password")


def test_postgres_keeps_its_data_across_a_restart_on_the_same_volume(database: Database) -> None:
    database.client("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('across restarts')")
    assert database.stop() < 20  # SIGINT (the image's STOPSIGNAL): a fast shutdown
    # What kubelet's fsGroup does to the volume at every mount: group 999, group-writable,
    # setgid directories. postgres refuses a group-writable data directory; the entrypoint
    # must put it back to 0700.
    for path in [database.data, *database.data.rglob("*")]:
        os.chown(path, -1, 999, follow_symlinks=False)
        if path.is_dir():
            os.chmod(path, path.stat().st_mode | 0o2070)
        elif path.is_file():
            os.chmod(path, path.stat().st_mode | 0o060)
    database.start()
    assert database.client("SELECT v FROM kept") == [["across restarts"]]


def test_postgres_without_a_password_says_so_in_one_line(kubenode: Path) -> None:
    result = podman(
        "run", "--rm", "--network", "none", "--user", "999:999", "--cap-drop", "ALL",
        "--env", "POSTGRES_USER=tpcbench", POSTGRES,
    )  # fmt: skip
    assert result.returncode != 0
    output = (result.stdout + result.stderr).strip().splitlines()
    assert len(output) == 1, output
    assert "POSTGRES_PASSWORD is not set" in output[0]

"""What one redirector lookup costs: a fresh name walked by hand from an entry redirector down to
the data server that holds it, each request timed (the "lookup" measurement kind).

A lookup (HTTPS): put a small fresh file `tpcbench-lookup-<uuid>` straight on ONE data server
(an HTTPS PUT to it, so no redirector has looked the name up before: cmsd caches locations,
and a name already asked would cost nothing), then GET it at the entry redirector without
following redirects. Each request is one step: a new connection (TCP + TLS) and the request,
timed together, to the server the previous answer named (a 302/307 `Location`). The step that
answers 200 is the data server. The file is deleted afterwards (straight from the data server).
root:// (protocol "root"): the same fresh file, looked up with `xrdfs stat` at the entry, the
steps read from XrdCl's debug log (lookup_root.py).

Levels: "local" (the entry is the file's own site's manager, `<site>-rdr`), "regional",
"global" (the entry is that level's redirector). Hops: the redirects followed (local 1,
regional 2, global 3 in a lab of both levels). Seconds per hop = seconds / hops.

A failed lookup is a record (outcome "failure", error_class, message), never an exception.
The JSON (LookupRecord.to_json) is the "lookup" kind's contract, POST /api/v1/lookups/.
"""

from __future__ import annotations

import ssl
import time
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

import httpx

from orchestrator.endpoints import ClientCredentials, Endpoint
from orchestrator.measurement import lookup_root
from orchestrator.transfers.error_classes import classify_http_status, classify_message
from orchestrator.transfers.record import ErrorClass

Level = Literal["local", "regional", "global"]
LEVELS: tuple[Level, ...] = ("local", "regional", "global")
PROTOCOLS = ("https", "root")
LOOKUP_PREFIX = "/tpcbench-lookup-"
LOOKUP_BYTES = 1024
MAX_STEPS = 8  # more redirects than any hierarchy of ours has: a loop
STEP_TIMEOUT = 30.0  # a manager may stall a request while it asks its servers (cms.delay)
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class LookupStep:
    server: str  # "name:port" (or "address:port" when the address is no lab node's)
    seconds: float  # connection (TCP + TLS) and the request, until its answer was read

    def to_json(self) -> dict[str, Any]:
        return {"server": self.server, "seconds": round(self.seconds, 6)}


@dataclass(frozen=True)
class LookupRecord:
    uuid: str
    protocol: str
    entry: str
    level: Level
    site: str
    level_rtt_ms: float | None
    started: datetime
    seconds: float | None
    hops: int
    steps: tuple[LookupStep, ...]
    data_server: str | None
    outcome: Literal["success", "failure"]
    error_class: ErrorClass | None = None
    message: str = ""
    campaign: str | None = None

    @property
    def seconds_per_hop(self) -> float | None:
        return self.seconds / self.hops if self.seconds is not None and self.hops else None

    def to_json(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "campaign": self.campaign,
            "protocol": self.protocol,
            "entry": self.entry,
            "level": self.level,
            "site": self.site,
            "level_rtt_ms": self.level_rtt_ms,
            "started": self.started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "seconds": None if self.seconds is None else round(self.seconds, 6),
            "hops": self.hops,
            "steps": [step.to_json() for step in self.steps],
            "data_server": self.data_server,
            "outcome": self.outcome,
            "error_class": self.error_class,
            "message": self.message,
        }


@dataclass(frozen=True)
class LookupPlan:
    """One lookup to make: ask `entry` for a file that only `holder` (a data server of `site`)
    has; `level_rtt_ms` is the lab's RTT target between the entry and the site."""

    entry: Endpoint
    holder: Endpoint
    site: str
    level: Level
    level_rtt_ms: float | None = None
    names: Mapping[str, str] = field(default_factory=dict)  # "address:port" -> "name:port"


def level_of(entry: Endpoint, site: str) -> Level | None:
    """The level a lookup entering at `entry` for a file of `site` measures, or None (another
    site's manager: it knows only its own site's servers)."""
    if entry.site is None and entry.name in ("regional", "global"):
        return entry.name  # type: ignore[return-value]
    return "local" if entry.site == site else None


def plan_lookups(
    redirectors: Sequence[Endpoint],
    nodes: Sequence[Endpoint],
    level_rtts: Mapping[str, Mapping[str, float]] | None = None,
    repeat: int = 1,
    entry: str | None = None,
    site: str | None = None,
) -> list[LookupPlan]:
    """The lookups of a lab or cluster: for each site (of `nodes`) and each level that runs
    (its manager, regional, global among `redirectors`), `repeat` lookups, the file held in
    turn by each of the site's data servers. `level_rtts` maps an entry's name to each site's
    RTT (ms); without it an entry's `rtt_targets_ms` to the holder is used (0 for local).
    `entry`/`site` keep only that entry redirector / that site."""
    names = server_names([*redirectors, *nodes])
    sites = sorted({n.site for n in nodes if n.site is not None and not n.redirector})
    plans = []
    for s in sites:
        if site is not None and s != site:
            continue
        holders = [n for n in nodes if n.site == s and not n.redirector]
        entries = [r for r in redirectors if level_of(r, s) is not None]
        entries.sort(key=lambda r: LEVELS.index(level_of(r, s) or "local"))
        for r in entries:
            if entry is not None and r.name != entry:
                continue
            level = level_of(r, s) or "local"
            for i in range(repeat):
                holder = holders[i % len(holders)]
                rtt = _rtt(r, holder, s, level, level_rtts)
                plans.append(LookupPlan(r, holder, s, level, rtt, names))
    return plans


def _rtt(
    entry: Endpoint,
    holder: Endpoint,
    site: str,
    level: Level,
    level_rtts: Mapping[str, Mapping[str, float]] | None,
) -> float | None:
    if level_rtts is not None and site in level_rtts.get(entry.name, {}):
        return level_rtts[entry.name][site]
    if holder.name in entry.rtt_targets_ms:
        return entry.rtt_targets_ms[holder.name]
    return 0.0 if level == "local" else None


def server_names(endpoints: Sequence[Endpoint]) -> dict[str, str]:
    """ "address:port" -> "name:port" for every port of `endpoints` (how steps name servers)."""
    return {
        f"{e.address}:{port}": f"{e.name}:{port}" for e in endpoints for port in e.ports.values()
    }


def run_lookup(
    plan: LookupPlan,
    client: ClientCredentials,
    protocol: str = "https",
    campaign: str | None = None,
) -> LookupRecord:
    """Put a fresh file on plan.holder (over HTTPS), walk the lookup from plan.entry over
    `protocol` ("https": GET, each redirect by hand; "root": `xrdfs stat`, lookup_root.py),
    delete the file."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"lookups are measured over {' or '.join(PROTOCOLS)}, not {protocol!r}")
    started = datetime.now(UTC)
    name = f"{LOOKUP_PREFIX}{uuidlib.uuid4()}"
    context = _tls(client)
    holder = f"https://{plan.holder.address}:{plan.holder.ports['https']}{name}"
    base = dict(
        uuid=str(uuidlib.uuid4()), protocol=protocol, entry=plan.entry.name, level=plan.level,
        site=plan.site, level_rtt_ms=plan.level_rtt_ms, campaign=campaign,
    )  # fmt: skip
    try:
        _put(holder, context)
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        message = f"putting the fresh file on {plan.holder.name}: {exc}"
        return LookupRecord(
            **base, started=started, seconds=None, hops=0, steps=(), data_server=None,
            outcome="failure", error_class=_error_class(exc), message=message,
        )  # fmt: skip
    try:
        if protocol == "root":
            return walk_root(plan, client, name, started=started, **base)
        entry = f"https://{plan.entry.address}:{plan.entry.ports['https']}{name}"
        return walk(entry, context, plan.names, started=started, **base)
    finally:
        _delete(holder, context)


def walk_root(
    plan: LookupPlan, client: ClientCredentials, name: str, *, started: datetime, **about: Any
) -> LookupRecord:
    """`xrdfs root://<entry> stat <name>`, its steps read from XrdCl's debug log."""
    url = f"root://{plan.entry.address}:{plan.entry.ports['root']}"
    env = lookup_root.xrdfs_environment(client, plan.entry)
    code, timed_out, log = lookup_root.stat_through(url, name, env)
    found, success = lookup_root.steps_of(log, plan.names)
    steps = [LookupStep(server, seconds) for server, seconds in found]
    if code == 0 and success and steps:
        return LookupRecord(
            **about, started=started, seconds=sum(s.seconds for s in steps),
            hops=len(steps) - 1, steps=tuple(steps), data_server=steps[-1].server,
            outcome="success",
        )  # fmt: skip
    outcome = lookup_root.root_outcome(code, timed_out, log)
    return _failed(about, started, steps, outcome["error_class"], outcome["message"])


def walk(
    url: str,
    context: ssl.SSLContext,
    names: Mapping[str, str],
    *,
    started: datetime,
    **about: Any,
) -> LookupRecord:
    """GET `url`, then each redirect's Location, one new connection per step, until an answer
    that is no redirect: 200 is the data server; anything else is a failure."""
    steps: list[LookupStep] = []
    first = time.perf_counter()
    status, detail = 0, ""
    try:
        while len(steps) < MAX_STEPS:
            with httpx.Client(verify=context, timeout=STEP_TIMEOUT) as http:
                t0 = time.perf_counter()  # the connection is made by the request
                response = http.get(url)
                took = time.perf_counter() - t0
            steps.append(LookupStep(_server(url, names), took))
            status = response.status_code
            if status in REDIRECTS and "location" in response.headers:
                url = urljoin(url, response.headers["location"])
                continue
            if status == 200:
                return LookupRecord(
                    **about, started=started, seconds=time.perf_counter() - first,
                    hops=len(steps) - 1, steps=tuple(steps), data_server=steps[-1].server,
                    outcome="success",
                )  # fmt: skip
            detail = response.text[:300].strip()
            break
        else:
            detail = f"more than {MAX_STEPS - 1} redirects (a loop?)"
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        return _failed(about, started, steps, _error_class(exc), f"{_server(url, names)}: {exc}")
    error_class = classify_http_status(status, detail) if status else "remote-failure"
    message = f"{_server(url, names)} answered {status}" + (f": {detail}" if detail else "")
    return _failed(about, started, steps, error_class, message)


def _failed(
    about: dict[str, Any],
    started: datetime,
    steps: list[LookupStep],
    error_class: ErrorClass,
    message: str,
) -> LookupRecord:
    return LookupRecord(
        **about, started=started, seconds=None, hops=max(len(steps) - 1, 0), steps=tuple(steps),
        data_server=None, outcome="failure", error_class=error_class, message=message,
    )  # fmt: skip


def _error_class(exc: BaseException) -> ErrorClass:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        return "tls" if classify_message(text) == "tls" else "connect"
    return classify_message(str(exc))


def _server(url: str, names: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    where = f"{parts.hostname}:{parts.port or 443}"
    return names.get(where, where)


def _tls(client: ClientCredentials) -> ssl.SSLContext:
    context = ssl.create_default_context(capath=str(client.certdir))
    context.load_cert_chain(str(client.cert), str(client.key))
    return context


def _put(url: str, context: ssl.SSLContext) -> None:
    with httpx.Client(verify=context, timeout=STEP_TIMEOUT) as http:
        response = http.put(url, content=b"x" * LOOKUP_BYTES)
    if response.status_code not in (200, 201, 204):
        raise httpx.HTTPStatusError(
            f"PUT answered {response.status_code}", request=response.request, response=response
        )


def _delete(url: str, context: ssl.SSLContext) -> None:
    try:
        with httpx.Client(verify=context, timeout=STEP_TIMEOUT) as http:
            http.delete(url)
    except (httpx.HTTPError, ssl.SSLError, OSError):
        pass  # a 1 KiB file left on a lab data server; the next lookup uses a new name

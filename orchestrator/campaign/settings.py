"""The orchestrator's settings and what a campaign takes of them.

`Settings`: defaults < config file (TOML) < environment (TPCBENCH_*) < flags, one table of
settings, each with its type and default; the config file uses the same names
(`max_parallel_pairs = 2`), the environment the upper-case names with a TPCBENCH_ prefix
(`TPCBENCH_MAX_PARALLEL_PAIRS=2`), the command line the dashed names
(`--max-parallel-pairs 2`). `tpcbench campaign run` and `tpcbench orchestrator` read them.

The layering is ours, not pydantic-settings': measured on 2.16.3, a BaseSettings version (flags
as init kwargs, the environment, TomlConfigSettingsSource) took 216 lines where this layering
took 212 as a module of its own, and was no simpler. It merges the layers before it validates,
so it cannot say which layer gave a bad value: these parsers, the per-layer error messages
(`TPCBENCH_STREAMS: streams: ...`) and `sources` stayed ours, plus two underscore APIs (an
environment source reading a given mapping, per-call sources for the config path); and it
refused dashed keys in the file (`max-parallel-pairs = 2`), which this layering takes.

`CampaignSettings`: what one campaign measures and how, and the plan they make over the nodes
(every ordered pair x every combination of the dimensions a transfer tool can run).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from orchestrator.campaign.planner import (
    DEFAULT_PROTOCOLS,
    DEFAULT_STREAMS,
    MeasurementSpec,
    plan_measurements,
)
from orchestrator.errors import UserError
from orchestrator.measurement.spec import SCOPES
from orchestrator.paths import tpcbench_home
from orchestrator.prelim.baseline import DEFAULT_OMIT as DEFAULT_BASELINE_OMIT
from orchestrator.prelim.baseline import DEFAULT_SECONDS as DEFAULT_BASELINE_SECONDS
from orchestrator.sizes import parse_size
from orchestrator.transfers import AUTH_MODES, CHECKSUMS, CLIENTS, unsupported_reason

ENV_PREFIX = "TPCBENCH_"
CONFIG_ENV = "TPCBENCH_CONFIG"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_DURATION_UNITS = {None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float | int) -> float:
    """Seconds in "90", "30s", "30m", "1.5h", "1d"."""
    if isinstance(text, int | float):
        return float(text)
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration; write e.g. 90s, 30m or 2h")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def parse_csv(text: str | list[Any]) -> list[str]:
    items = text if isinstance(text, list) else str(text).split(",")
    return [str(i).strip() for i in items if str(i).strip()]


def parse_int_list(text: str | list[Any]) -> list[int]:
    try:
        values = [int(v) for v in parse_csv(text)]
    except ValueError:
        raise ValueError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise ValueError(f"{text!r}: give one or more positive integers, e.g. 8,1")
    return values


def _one_of(text: str | list[Any], known: tuple[str, ...]) -> list[str]:
    values = parse_csv(text)
    unknown = [v for v in values if v not in known]
    if unknown or not values:
        raise ValueError(f"{','.join(unknown) or 'nothing'} is not one of {', '.join(known)}")
    return values


def _single(text: str, known: tuple[str, ...]) -> str:
    value = str(text).strip()
    if value not in known:
        raise ValueError(f"{value or 'nothing'} is not one of {', '.join(known)}")
    return value


def parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    lowered = str(text).strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not a boolean")


def _positive_int(text: str | int) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"{text!r} must be at least 1")
    return value


def _non_negative_int(text: str | int) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"{text!r} must be 0 or more")
    return value


def _size(text: str | int) -> int:
    return int(text) if isinstance(text, int) else parse_size(text)


def _optional_str(text: Any) -> str | None:
    return str(text) if text not in (None, "") else None


def _port(text: str | int) -> int:
    value = int(text)
    if not 0 <= value < 65536:
        raise ValueError(f"{text!r} is not a TCP port")
    return value


@dataclass
class Settings:
    protocols: list[str] = field(default_factory=lambda: ["https", "gridftp"])
    streams: list[int] = field(default_factory=lambda: [8, 1])
    auth: list[str] = field(default_factory=lambda: ["x509"])  # x509 and/or token
    client: list[str] = field(default_factory=lambda: ["native"])  # native and/or gfal2
    checksum: list[str] = field(default_factory=lambda: ["none"])  # none and/or adler32
    scope: str = "host"  # host: host pairs; site: site pairs through their fronts
    sweep_hosts: bool = False  # site scope: the scaling sweep over 1..M host pairs
    lookups: bool = False  # site scope: time a lookup from every redirector level
    transfers: int = 11
    file_size: int = 2**30
    max_parallel_pairs: int = 1
    # The same default as `tpcbench measure`: generous for 1 GiB, yet a hung transfer cannot
    # hold a campaign for long (globus-url-copy's own stall timeout is also 600 s).
    transfer_timeout: float = 600.0
    discovery: str = "lab"
    namespace: str | None = None  # kubernetes discovery; default: the service account's
    inventory: str | None = None  # lab discovery; default: the running lab's inventory
    client_cert: str | None = None  # kubernetes: the orchestrator's client certificate
    client_key: str | None = None
    certdir: str | None = None
    # kubernetes: the token issuer's URL and signing key, to mint tokens (auth token)
    token_issuer: str | None = None
    token_issuer_key: str | None = None
    report_to: str | None = None
    token_file: str | None = None
    spool_dir: str | None = None  # default $TPCBENCH_HOME/spool
    schedule: str = "0 0,12 * * *"
    slip: float = 0.0  # seconds of random delay after each scheduled time
    poll_interval: float = 30.0  # how often to ask the webapp for "run now" campaigns
    stop_grace: float = 25.0  # on SIGTERM: how long running measurements may finish
    metrics_bind: str = "127.0.0.1"
    metrics_port: int = 9105
    run_on_start: bool = False  # start one campaign right away, then follow the schedule
    baseline: bool = False  # measure each pair's link (iperf3) before its transfers
    baseline_seconds: int = DEFAULT_BASELINE_SECONDS  # how long each iperf3 test measures
    baseline_omit: int = DEFAULT_BASELINE_OMIT  # seconds of slow start before it, left out
    # a scheduled campaign longer than its cycle: rotate | shorten | off (campaign/rotation.py)
    cycle_fit: str = "rotate"
    full_duplex: bool = False  # a node may send in one measurement while receiving in another
    sources: dict[str, str] = field(default_factory=dict)  # setting -> where it came from


PARSERS: dict[str, Callable[[Any], Any]] = {
    "protocols": parse_csv,
    "streams": parse_int_list,
    "auth": lambda text: _one_of(text, AUTH_MODES),
    "client": lambda text: _one_of(text, CLIENTS),
    "checksum": lambda text: _one_of(text, CHECKSUMS),
    "scope": lambda text: _single(text, SCOPES),
    "sweep_hosts": parse_bool,
    "lookups": parse_bool,
    "transfers": _positive_int,
    "file_size": _size,
    "max_parallel_pairs": _positive_int,
    "transfer_timeout": parse_duration,
    "discovery": str,
    "namespace": _optional_str,
    "inventory": _optional_str,
    "client_cert": _optional_str,
    "client_key": _optional_str,
    "certdir": _optional_str,
    "token_issuer": _optional_str,
    "token_issuer_key": _optional_str,
    "report_to": _optional_str,
    "token_file": _optional_str,
    "spool_dir": _optional_str,
    "schedule": str,
    "slip": parse_duration,
    "poll_interval": parse_duration,
    "stop_grace": parse_duration,
    "metrics_bind": str,
    "metrics_port": _port,
    "run_on_start": parse_bool,
    "baseline": parse_bool,
    "baseline_seconds": _positive_int,
    "baseline_omit": _non_negative_int,
    "cycle_fit": lambda text: _single(text, ("rotate", "shorten", "off")),
    "full_duplex": parse_bool,
}


def default_config_path(env: Mapping[str, str]) -> Path:
    return Path(env[CONFIG_ENV]) if env.get(CONFIG_ENV) else tpcbench_home() / "config.toml"


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_path: str | Path | None = None,
) -> Settings:
    """Merge the four layers; `flags` holds only the flags the user actually gave."""
    env = os.environ if env is None else env
    settings = Settings()
    explicit_config = config_path is not None or bool(env.get(CONFIG_ENV))
    path = Path(config_path) if config_path is not None else default_config_path(env)
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if path.is_file():
        try:
            layers.append((f"config {path}", tomllib.loads(path.read_text(encoding="utf-8"))))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise UserError(f"cannot read the config file {path}: {exc}") from None
    elif explicit_config:
        raise UserError(f"the config file {path} does not exist")
    layers.append(
        (
            "environment",
            {
                key[len(ENV_PREFIX) :].lower(): value
                for key, value in env.items()
                if key.startswith(ENV_PREFIX) and key[len(ENV_PREFIX) :].lower() in PARSERS
            },
        )
    )
    layers.append(("flag", {k: v for k, v in (flags or {}).items() if v is not None}))
    known = {f.name for f in fields(Settings)} - {"sources"}
    for origin, values in layers:
        for key, raw in values.items():
            name = key.replace("-", "_")
            if name not in known:
                if origin.startswith("config"):
                    raise UserError(f"{origin}: unknown setting {key!r}")
                continue
            try:
                setattr(settings, name, PARSERS[name](raw))
            except (ValueError, TypeError) as exc:
                where = f"{ENV_PREFIX}{name.upper()}" if origin == "environment" else origin
                raise UserError(f"{where}: {name}: {exc}") from None
            settings.sources[name] = origin
    if settings.baseline and settings.baseline_omit >= settings.baseline_seconds:
        raise UserError(
            f"baseline_omit ({settings.baseline_omit} s of slow start left out) must be fewer "
            f"than baseline_seconds ({settings.baseline_seconds} s measured after it), e.g. "
            "--baseline-seconds 10 --baseline-omit 2"
        )
    for name in ("sweep_hosts", "lookups"):
        if getattr(settings, name) and settings.scope != "site":
            flag = name.replace("_", "-")
            raise UserError(f"--{flag} measures sites: give --scope site with it")
    return settings


@dataclass(frozen=True)
class CampaignSettings:
    """What a campaign measures and how; everything but its collaborators."""

    protocols: tuple[str, ...] = DEFAULT_PROTOCOLS
    streams: tuple[int, ...] = DEFAULT_STREAMS
    auths: tuple[str, ...] = ("x509",)  # how the transfers are authorized: x509, token
    clients: tuple[str, ...] = ("native",)  # what drives the copies: native, gfal2
    checksums: tuple[str, ...] = ("none",)  # the checksum step after each copy: none, adler32
    scope: str = "host"  # site: between sites' fronts (campaign/site_scope.py)
    sweep_hosts: bool = False  # site scope: each site measurement swept over 1..M host pairs
    lookups: bool = False  # site scope: a lookup timed from every redirector level
    transfers: int = 11
    file_size: int = 2**30
    max_parallel_pairs: int = 1
    stop_grace: float | None = None  # after a stop, running measurements are cancelled then
    trigger: str = "cli"  # cli | schedule | manual
    schedule_expr: str = ""  # the cron expression of a scheduled campaign
    rediscover_every: float = 30.0  # seconds between asking discovery for vanished nodes
    baseline: bool = False  # each ordered pair's link (iperf3) before its first measurement
    baseline_seconds: int = DEFAULT_BASELINE_SECONDS
    baseline_omit: int = DEFAULT_BASELINE_OMIT
    measure_options: Mapping[str, Any] = field(default_factory=dict)  # e.g. the timeout
    # fitting the cycle (campaign/rotation.py); a campaign without a cycle measures it all
    cycle: float | None = None  # seconds between the schedule's firings
    slip: float = 0.0  # the schedule's random delay, taken off the cycle
    cycle_fit: str = "rotate"  # rotate | shorten | off
    deadline: datetime | None = None  # the next cycle's start: later ones are missed
    full_duplex: bool = False  # a node sends in one measurement while receiving in another

    @property
    def dimensions(self) -> dict[str, Sequence[Any]]:
        """What every ordered pair is measured across: a MeasurementSpec field, its values."""
        return {
            "protocol": self.protocols,
            "streams": self.streams,
            "auth": self.auths,
            "client": self.clients,
            "checksum": self.checksums,
            "scope": (self.scope,),
        }

    @property
    def per_pair(self) -> int:
        """Measurements per ordered pair (the combinations a transfer tool can run)."""
        return sum(supports(spec) is None for spec in self._one_pair())

    def plan(self, nodes: Sequence[Any]) -> list[MeasurementSpec]:
        """Every ordered pair x every combination a transfer tool can run (`unsupported`).

        Which combinations run is asked once, for the pair a -> b, not for every pair."""
        runnable = {spec for spec in self._one_pair() if supports(spec) is None}
        return [
            spec
            for spec in plan_measurements(nodes, self.dimensions)
            if replace(spec, src="a", dst="b") in runnable
        ]

    def unsupported(self) -> list[str]:
        """Why the combinations left out of the plan cannot run, one line each."""
        return sorted({why for spec in self._one_pair() if (why := supports(spec)) is not None})

    def _one_pair(self) -> list[MeasurementSpec]:
        """Every combination of the dimensions, once (for the ordered pair a -> b)."""
        return [s for s in plan_measurements(["a", "b"], self.dimensions) if s.src == "a"]


def supports(spec: MeasurementSpec) -> str | None:
    """None when a transfer tool can take `spec`, else why not (e.g. gridftp with tokens)."""
    return unsupported_reason(spec.protocol, spec.client, spec.auth, spec.checksum)

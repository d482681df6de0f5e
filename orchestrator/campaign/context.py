"""From settings to what a campaign needs: a discovery backend, client credentials, a size,
a spool and a reporter. Shared by `tpcbench campaign run` and `tpcbench orchestrator`."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ca.tokens import TokenError, TokenMinter
from orchestrator.campaign.settings import CampaignSettings, Settings
from orchestrator.discovery import make_discovery
from orchestrator.endpoints import ClientCredentials
from orchestrator.errors import UserError
from orchestrator.paths import tpcbench_home
from orchestrator.report.reporter import Reporter, load_token
from orchestrator.report.spool import Spool, default_spool_dir


@dataclass
class CampaignContext:
    discovery: Any
    creds: ClientCredentials
    file_size: int

    def campaign_settings(self, settings: Settings, **run: Any) -> CampaignSettings:
        """A campaign's settings from the orchestrator's, the same for CLI and service; `run`:
        what differs between them (trigger, schedule_expr, stop_grace)."""
        return CampaignSettings(
            protocols=tuple(settings.protocols),
            streams=tuple(settings.streams),
            auths=tuple(settings.auth),
            clients=tuple(settings.client),
            checksums=tuple(settings.checksum),
            scope=settings.scope,
            sweep_hosts=settings.sweep_hosts,
            lookups=settings.lookups,
            transfers=settings.transfers,
            file_size=self.file_size,
            max_parallel_pairs=settings.max_parallel_pairs,
            measure_options={"timeout": settings.transfer_timeout},
            baseline=settings.baseline,
            baseline_seconds=settings.baseline_seconds,
            baseline_omit=settings.baseline_omit,
            full_duplex=settings.full_duplex,
            **run,
        )


def build_context(settings: Settings, *, need_credentials: bool = True) -> CampaignContext:
    """Discovery and credentials for the configured backend (`need_credentials=False`: only
    discovery is wanted, as by `campaign plan`).

    The lab's nodes hold a source file of the lab's size only, so with lab discovery the
    file size defaults to the lab's (an explicit setting still wins).
    """
    if settings.discovery == "lab":
        from orchestrator.lab.inventory import inventory_path, load_inventory

        path = Path(settings.inventory) if settings.inventory else inventory_path()
        inventory = load_inventory(path)
        if need_credentials:  # about to measure: an emulated WAN must be in place
            from orchestrator.lab.wan import require_delay_line

            require_delay_line(path)
        file_size = settings.file_size
        if "file_size" not in settings.sources:
            file_size = inventory.file_size
        return CampaignContext(make_discovery("lab", inventory=path), inventory.client, file_size)
    if settings.discovery == "kubernetes":
        missing = [
            name for name in ("client_cert", "client_key", "certdir") if not getattr(settings, name)
        ]
        if missing and need_credentials:
            flags = ", ".join(f"--{m.replace('_', '-')}" for m in missing)
            raise UserError(f"kubernetes discovery needs the client credentials: {flags}")
        creds = ClientCredentials(
            cert=Path(settings.client_cert or ""),
            key=Path(settings.client_key or ""),
            certdir=Path(settings.certdir or ""),
            tokens=token_minter(settings) if need_credentials else None,
        )
        discovery = make_discovery("kubernetes", namespace=settings.namespace)
        return CampaignContext(discovery, creds, settings.file_size)
    make_discovery(settings.discovery)  # an unknown backend: a UserError naming the known ones
    raise UserError(f"campaigns cannot use the {settings.discovery!r} discovery backend")


def token_minter(settings: Settings) -> TokenMinter | None:
    """What mints the tokens of `auth token` (None without it): the issuer's key is read now,
    so a missing or damaged key stops the campaign before it starts, saying which."""
    if "token" not in settings.auth:
        return None
    if not (settings.token_issuer and settings.token_issuer_key):
        raise UserError(
            "auth token needs the token issuer's URL and signing key: TPCBENCH_TOKEN_ISSUER and "
            "TPCBENCH_TOKEN_ISSUER_KEY (the chart sets both when campaign.auth has token)"
        )
    try:
        return TokenMinter.for_key(settings.token_issuer, Path(settings.token_issuer_key))
    except TokenError as exc:
        raise UserError(f"cannot mint tokens for {settings.token_issuer}: {exc}") from exc


def build_reporter(settings: Settings, **options: Any) -> Reporter:
    spool = Spool(Path(settings.spool_dir) if settings.spool_dir else default_spool_dir())
    token = load_token(settings.token_file)
    if settings.report_to and not token:
        raise UserError(
            "--report-to needs an API token: set TPCBENCH_API_TOKEN or pass --token-file "
            "(create one with: python webapp/manage.py create_api_token orchestrator)"
        )
    return Reporter(spool, settings.report_to, token, **options)


@contextmanager
def campaign_lock(home: Path | None = None) -> Iterator[None]:
    """Never two campaigns at once on this machine (the service and `campaign run` alike)."""
    path = (home or tpcbench_home()) / "campaign.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            raise UserError(f"a campaign is already running (pid {holder})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)

"""Notifications of alert state changes (docs/alerts.md): a webhook (a JSON POST whose
"text" any chat tool shows, with the change's fields beside it) and mail through Django's
mail backend. Sent after the evaluation's commit on one background thread, each with a
timeout: a slow or failing receiver is logged and blocks neither ingest nor the pages.

An acknowledged alert is muted until it recovers: its changes are not sent, except the
recovery to OK itself (which clears the acknowledgement).
"""

import json
import logging
import urllib.request
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from datetime import datetime

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

from webapp.results.models.alerts import AlertState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateChange:
    """What a notification says about one change (plain data: sent after the commit)."""

    alert_id: int
    src: str
    dst: str
    check: dict
    from_state: str
    to_state: str
    at: datetime
    reason: str
    acknowledged: bool  # the alert was acknowledged when it changed (then: muted unless OK)


# One sender thread: notifications go out in order, and never more than one at a time.
_sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tpcbench-notify")
_pending: list[Future] = []


def to_send(changes: Sequence[StateChange]) -> list[StateChange]:
    """The changes an operator hears of: not those of acknowledged alerts, but recoveries."""
    return [c for c in changes if not c.acknowledged or c.to_state == AlertState.OK]


def check_text(change: StateChange) -> str:
    c = change.check
    dims = f"{c['protocol']} x{c['streams']} {c['auth']}/{c['client']}/{c['checksum']}"
    return f"{change.src} -> {change.dst} {dims} ({c['scope']})"


def message_text(change: StateChange) -> str:
    text = (
        f"[tpc-bench] {change.to_state.upper()}: {check_text(change)} "
        f"(was {change.from_state}) at {change.at:%Y-%m-%d %H:%M} UTC: {change.reason}"
    )
    if settings.TPCBENCH_PUBLIC_URL:
        text += f" {settings.TPCBENCH_PUBLIC_URL}/api/v1/alerts/{change.alert_id}/"
    return text


def webhook_body(change: StateChange) -> dict:
    """{"text": one line for chat tools (Slack, Mattermost, Rocket.Chat, Teams' incoming
    webhooks read "text"), "alert": the change's fields}."""
    fields = asdict(change)
    fields["at"] = change.at.isoformat()
    return {"text": message_text(change), "alert": fields}


def send_webhook(change: StateChange) -> None:
    body = json.dumps(webhook_body(change)).encode()
    request = urllib.request.Request(
        settings.TPCBENCH_ALERT_WEBHOOK_URL,
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=settings.TPCBENCH_ALERT_WEBHOOK_TIMEOUT):
        pass  # any 2xx; urlopen raises on the others


def send_mail_of(change: StateChange) -> None:
    subject = f"[tpc-bench] {change.to_state.upper()}: {check_text(change)}"
    send_mail(
        subject,
        message_text(change) + "\n",
        settings.TPCBENCH_ALERT_MAIL_FROM,
        settings.TPCBENCH_ALERT_MAIL_TO,
    )


def send_now(changes: Sequence[StateChange]) -> None:
    """Send each change by every configured way; a failure is logged, the rest still go."""
    for change in to_send(changes):
        ways = []
        if settings.TPCBENCH_ALERT_WEBHOOK_URL:
            ways.append(("webhook", send_webhook))
        if settings.TPCBENCH_ALERT_MAIL_TO:
            ways.append(("mail", send_mail_of))
        for name, send in ways:
            try:
                send(change)
            except Exception:
                log.exception("alert %s notification of alert %s failed", name, change.alert_id)


def notify_later(changes: Sequence[StateChange]) -> None:
    """Send after the current transaction commits (at once outside one), on the sender
    thread."""
    if not to_send(changes):
        return

    def submit() -> None:
        _pending.append(_sender.submit(send_now, list(changes)))

    transaction.on_commit(submit)


def notifications_wait(timeout: float = 30.0) -> None:
    """Wait for the notifications submitted so far (tests, the backfill command)."""
    done, _ = wait(list(_pending), timeout=timeout)
    for future in done:
        _pending.remove(future)

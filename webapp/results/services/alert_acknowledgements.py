"""An operator's acknowledgement of an alert: muted until it recovers (docs/alerts.md)."""

from webapp.results.models import Alert
from webapp.results.models.alerts import AlertState


class AlertIsOk(Exception):
    """An OK alert has nothing to acknowledge."""


def alert_acknowledge(*, alert: Alert) -> Alert:
    """Set the flag (services.alerts clears it when the check is ok again)."""
    updated = Alert.objects.filter(pk=alert.pk).exclude(state=AlertState.OK)
    if not updated.update(acknowledged=True):
        raise AlertIsOk(f"alert {alert.pk} is ok: there is nothing to acknowledge")
    alert.refresh_from_db()
    return alert

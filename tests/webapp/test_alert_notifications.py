"""Notifications of alert state changes (issue 24): a webhook to a local HTTP receiver and
Django's locmem mail; a failing, refusing or stalled receiver blocks and fails nothing."""

import json
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from webapp.results.models import Alert, Measurement
from webapp.results.services import notifications
from webapp.results.services.notifications import notifications_wait


class Receiver:
    """A webhook receiver on 127.0.0.1: records each JSON body, answers `status`; while
    `hold` is clear it keeps the request waiting (a stalled chat server)."""

    def __init__(self, status: int = 200):
        self.status = status
        self.bodies: list[dict] = []
        self.hold = threading.Event()
        self.hold.set()
        self.got = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                receiver.got.set()
                receiver.hold.wait(60)
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


@pytest.fixture
def notifying(settings, mailoutbox, receiver):
    settings.TPCBENCH_ALERT_WEBHOOK_URL = receiver.url
    settings.TPCBENCH_ALERT_WEBHOOK_TIMEOUT = 2.0
    settings.TPCBENCH_ALERT_MAIL_TO = ["noc@example.org", "oncall@example.org"]
    settings.TPCBENCH_PUBLIC_URL = "https://tpcbench.example.org"
    return mailoutbox


@pytest.fixture
def send(store, django_capture_on_commit_callbacks):
    """Store one check's measurements (12 h apart; None: all failed), running what the
    ingest leaves for after its commit."""

    def post(values, *, start_hours=200.0, wait=True, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            for i, gbps in enumerate(values):
                when = timezone.now() - timedelta(hours=start_hours - 12 * i)
                failed = 3 if gbps is None else 0
                store(gbps=gbps or 1.0, failed=failed, started=when, **kwargs)
        if wait:
            notifications_wait()

    return post


@pytest.mark.django_db
def test_a_state_change_is_posted_and_mailed(send, receiver, notifying):
    send([40, 40, 40, 40, 20])
    assert receiver.bodies == [] and notifying == []  # one slow measurement: no change
    send([21], start_hours=100)
    alert = Alert.objects.get()
    [body] = receiver.bodies
    assert body["text"].startswith("[tpc-bench] WARNING: node-a -> node-b https x8 x509/")
    assert "(was ok)" in body["text"] and "below 70% of the 20-day median" in body["text"]
    assert body["text"].endswith(f"https://tpcbench.example.org/api/v1/alerts/{alert.id}/")
    fields = body["alert"]
    assert (fields["src"], fields["dst"], fields["from_state"], fields["to_state"]) == (
        "node-a", "node-b", "ok", "warning"
    )  # fmt: skip
    assert fields["check"]["protocol"] == "https" and fields["check"]["streams"] == 8
    assert fields["alert_id"] == alert.id and fields["acknowledged"] is False
    [mail] = notifying
    assert mail.to == ["noc@example.org", "oncall@example.org"]
    assert mail.subject == "[tpc-bench] WARNING: node-a -> node-b https x8 x509/native/none (host)"
    assert body["text"] in mail.body


@pytest.mark.django_db
@pytest.mark.parametrize("failure", ["500", "refused"])
def test_a_failing_receiver_is_logged_and_mail_still_goes(
    send, receiver, notifying, settings, caplog, failure
):
    if failure == "500":
        receiver.status = 500
    else:  # nothing listens there any more
        receiver.close()
    with caplog.at_level(logging.ERROR):
        send([40, None, None])  # asserts each ingest's 201
    assert Alert.objects.get().state == "critical" and Measurement.objects.count() == 3
    assert "alert webhook notification of alert" in caplog.text
    assert len(notifying) == 1 and "CRITICAL" in notifying[0].subject


@pytest.mark.django_db
def test_a_stalled_receiver_does_not_hold_the_ingest(
    send, receiver, notifying, anonymous, settings
):
    settings.TPCBENCH_ALERT_WEBHOOK_TIMEOUT = 60.0
    receiver.hold.clear()  # the receiver keeps every request waiting until released
    send([40, None, None], wait=False)  # three 201s
    assert receiver.got.wait(30)  # the notification reached the receiver, which holds it:
    assert [f for f in notifications._pending if not f.done()]  # still in flight
    assert anonymous.get("/api/v1/alerts/").json()["results"][0]["state"] == "critical"
    receiver.hold.set()
    notifications_wait()
    assert len(receiver.bodies) == 1 and len(notifying) == 1


@pytest.mark.django_db
def test_an_acknowledged_alert_is_muted_until_it_recovers(send, receiver, notifying, reporter):
    send([40, 40, 40, 40, 20, 20])
    alert = Alert.objects.get()
    assert reporter.post(f"/api/v1/alerts/{alert.id}/acknowledge/").status_code == 200
    send([5, 5], start_hours=100)  # warning -> critical: muted
    alert.refresh_from_db()
    assert alert.state == "critical" and alert.acknowledged
    send([40, 40], start_hours=70)  # the recovery is told, and the flag clears
    alert.refresh_from_db()
    assert (alert.state, alert.acknowledged) == ("ok", False)
    changes = [(b["alert"]["from_state"], b["alert"]["to_state"]) for b in receiver.bodies]
    assert changes == [("ok", "warning"), ("critical", "ok")]
    assert receiver.bodies[1]["alert"]["acknowledged"] is True
    assert len(notifying) == 2


@pytest.mark.django_db
def test_nothing_is_sent_without_a_webhook_or_recipients(send, receiver, mailoutbox):
    send([40, None, None])
    assert Alert.objects.get().state == "critical"
    assert receiver.bodies == [] and mailoutbox == []

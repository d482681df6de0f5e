"""The grid page's Campaigns box and its "Run a campaign now" button, on PostgreSQL."""

from __future__ import annotations

import re
import threading
import uuid as uuid_lib
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.dashboard.run_now import REQUESTED
from webapp.results.api.permissions import reporter_ensure
from webapp.results.choices import CampaignState, Trigger
from webapp.results.models import Campaign
from webapp.results.selectors.campaigns import campaign_status
from webapp.results.services import campaigns as campaign_services

pytestmark = pytest.mark.django_db

RUN_NOW = "/campaigns/run-now/"
BUTTON = "Run a campaign now"
LOGIN_LINK = '<a href="/admin/login/?next=/">Log in to request a campaign</a>'
PASSWORD = "a-long-enough-password-42"


@pytest.fixture
def reporter_user(db):
    """A person in tpcbench-reporters (the group whose permissions the API's writes check)."""
    user = reporter_ensure(name="alice")
    user.is_staff = True  # the admin login form takes staff accounts only
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def alice(reporter_user) -> Client:
    client = Client()
    client.force_login(reporter_user)
    return client


@pytest.fixture
def bob(db) -> Client:
    """Logged in, but without results.add_campaign."""
    user = get_user_model().objects.create_user("bob", password=PASSWORD, is_staff=True)
    client = Client()
    client.force_login(user)
    return client


def pending() -> list[Campaign]:
    return list(Campaign.objects.filter(state=CampaignState.PENDING))


def box(html: str) -> str:
    match = re.search(r'<section class="campaigns".*?</section>', html, re.S)
    assert match, "no Campaigns box on the page"
    return match.group(0)


def test_anonymous_sees_the_login_link_and_no_button(client):
    html = box(client.get("/").content.decode())
    assert LOGIN_LINK in html
    assert BUTTON not in html
    assert "No campaign running." in html
    assert "No campaign has finished yet." in html


def test_reporter_sees_the_button_in_a_csrf_protected_form(alice):
    html = box(alice.get("/").content.decode())
    assert BUTTON in html
    assert f'action="{RUN_NOW}"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert "Log in to request a campaign" not in html


def test_user_without_the_permission_sees_no_button_and_gets_403(bob):
    assert BUTTON not in box(bob.get("/").content.decode())
    assert bob.post(RUN_NOW).status_code == 403
    assert not Campaign.objects.exists()


def test_anonymous_post_is_sent_to_the_login_and_requests_nothing(client):
    response = client.post(RUN_NOW)
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/"
    assert not Campaign.objects.exists()


def test_get_is_405(alice, client):
    assert alice.get(RUN_NOW).status_code == 405
    assert client.get(RUN_NOW).status_code == 405
    assert not Campaign.objects.exists()


def test_post_creates_one_pending_manual_campaign_the_orchestrator_can_see(alice, reporter_user):
    response = alice.post(RUN_NOW, follow=True)
    assert response.redirect_chain == [("/", 302)]
    html = box(response.content.decode())
    assert REQUESTED in html
    [campaign] = pending()
    assert campaign.trigger == Trigger.MANUAL
    assert campaign.started is None
    # What the orchestrator polls for.
    listed = APIClient().get("/api/v1/campaigns/", {"state": "pending"}).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [r["uuid"] for r in rows] == [str(campaign.uuid)]
    # The box names who asked; the message is shown once.
    assert '<span class="requester">alice</span>' in html
    assert REQUESTED not in alice.get("/").content.decode()


def test_a_second_press_requests_nothing_more(alice):
    alice.post(RUN_NOW, follow=True)  # follow: its message is shown (and used up) on the way
    [first] = pending()
    html = box(alice.post(RUN_NOW, follow=True).content.decode())
    assert "A campaign is already pending" in html
    assert REQUESTED not in html
    assert pending() == [first]
    assert Campaign.objects.count() == 1


def test_a_running_campaign_makes_the_press_request_nothing(alice, ingest):
    ingest(campaign=str(uuid_lib.uuid4()))  # a measurement of an unknown campaign: running
    html = box(alice.post(RUN_NOW, follow=True).content.decode())
    assert "A campaign is already running" in html
    assert pending() == []


def _lock_waiters() -> int:
    """Sessions of this test database waiting for a lock another transaction holds."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_two_presses_at_once_take_turns_and_request_one_campaign(reporter_user, monkeypatch):
    """The second press waits for the first one's commit, then sees its campaign."""
    created, go = threading.Event(), threading.Event()
    campaign_request = campaign_services.campaign_request

    def slow_request(**kwargs):  # the first press holds its transaction open after creating
        campaign = campaign_request(**kwargs)
        if not created.is_set():
            created.set()
            go.wait(60)
        return campaign

    monkeypatch.setattr(campaign_services, "campaign_request", slow_request)
    found: dict[str, tuple[Campaign, bool]] = {}

    def press(name: str) -> None:
        try:
            found[name] = campaign_services.campaign_run_now(user=reporter_user)
        finally:
            connection.close()

    first = threading.Thread(target=press, args=("first",))
    first.start()
    assert created.wait(60)
    second = threading.Thread(target=press, args=("second",))
    second.start()
    waited = False
    for _ in range(600):  # until the second press waits on the first one's lock
        if waited := _lock_waiters() > 0:
            break
        second.join(0.05)
    go.set()
    first.join(60)
    second.join(60)
    assert waited, "the second press did not wait for the first one"
    assert found["first"][1] is True and found["second"] == (found["first"][0], False)
    assert len(pending()) == 1


def test_csrf_is_enforced(reporter_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(reporter_user)
    assert client.post(RUN_NOW).status_code == 403
    assert not Campaign.objects.exists()
    page = client.get("/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    response = client.post(RUN_NOW, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert len(pending()) == 1


def test_api_request_is_shown_as_from_the_api(client, reporter):
    assert reporter.post("/api/v1/campaigns/", {}, format="json").status_code == 201
    reporter.post("/api/v1/campaigns/", {}, format="json")
    html = box(client.get("/").content.decode())
    assert "request by the API" in html
    assert "(and 1 more)" in html


def test_box_shows_running_landed_count_and_last_finished_tally(client, ingest, reporter):
    done = str(uuid_lib.uuid4())
    earlier = timezone.now() - timedelta(hours=5)
    for dst, failed in (("node-b", 0), ("node-c", 0), ("node-d", 3)):
        ingest(campaign=done, dst=dst, failed=failed, started=earlier)
    ingest(campaign=done, dst="node-e", failed=11, started=earlier)  # every transfer failed
    patched = reporter.patch(f"/api/v1/campaigns/{done}/", {"state": "finished"}, format="json")
    assert patched.status_code == 200
    running = str(uuid_lib.uuid4())
    for dst in ("node-b", "node-c", "node-d"):
        ingest(campaign=running, dst=dst)

    html = box(client.get("/").content.decode())
    assert '<span class="landed">3 measurements landed</span>' in html
    assert '<span class="ok-count">2 ok</span>' in html
    assert '<span class="failed-count">2 failed</span>' in html
    assert "Last finished" in html


def test_status_is_one_query_whatever_the_campaigns(alice, ingest, django_assert_num_queries):
    alice.post(RUN_NOW)
    for _ in range(2):
        ingest(campaign=str(uuid_lib.uuid4()), dst="node-c")
    with django_assert_num_queries(1):
        status = campaign_status()
    assert status.pending is not None and status.pending.requested_by == "alice"
    assert status.running is not None and status.running.landed == 1
    assert status.busy == status.pending


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_run_now_in_chromium(live_server, reporter_user, tmp_path, chromium):
    from playwright.sync_api import expect

    page = chromium.new_page()
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Log in to request a campaign").click()
    page.fill("#id_username", "alice")
    page.fill("#id_password", PASSWORD)
    page.locator('input[type="submit"]').click()
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("button", name=BUTTON).click()
    expect(page.locator(".campaigns .message")).to_have_text(REQUESTED)
    expect(page.locator(".campaign-pending .requester")).to_have_text("alice")
    shot = tmp_path / "run-now.png"
    page.screenshot(path=shot)
    print(f"screenshot: {shot}")  # pytest -s shows it
    # Through the API the orchestrator polls (Django refuses ORM calls inside Playwright's loop).
    answer = page.request.get(f"{live_server.url}/api/v1/campaigns/?state=pending").json()
    assert [c["trigger"] for c in answer["results"]] == ["manual"]

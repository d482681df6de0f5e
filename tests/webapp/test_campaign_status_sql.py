"""The Campaigns box's query compiled once (results.compiled_sql) reads what the ORM query reads."""

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType

from webapp.results.models import Campaign
from webapp.results.selectors import campaigns as box

pytestmark = pytest.mark.django_db


def same_rows() -> list[dict]:
    compiled = box._status_rows()
    assert compiled == list(box._status_rows.queryset())
    return compiled


def test_compiled_status_rows_equal_the_orm_rows(reporter, ingest):
    assert same_rows() == []
    created = [reporter.post("/api/v1/campaigns/", {}, format="json").json()["uuid"] for _ in "abc"]
    first, second, third = created
    ingest(campaign=first, dst="node-c")
    ingest(campaign=first, dst="node-d", failed=11)
    reporter.patch(f"/api/v1/campaigns/{first}/", {"state": "finished"}, format="json")
    ingest(campaign=second, dst="node-c")
    reporter.patch(f"/api/v1/campaigns/{second}/", {"state": "running"}, format="json")
    user = get_user_model().objects.create_user("alice")
    LogEntry.objects.create(
        user=user,
        content_type=ContentType.objects.get_for_model(Campaign),
        object_id=str(Campaign.objects.get(uuid=third).pk),
        object_repr=third,
        action_flag=ADDITION,
    )
    rows = {row["state"]: row for row in same_rows()}
    assert set(rows) == {"finished", "running", "pending"}
    assert (rows["finished"]["landed"], rows["finished"]["ok"]) == (2, 1)
    assert rows["pending"]["requested_by"] == "alice"
    status = box.campaign_status()
    assert status.pending.uuid == third and status.running.uuid == second
    assert status.last.uuid == first and status.last.failed == 1

"""The grid page's "Run a campaign now" button: a pending manual campaign, at most one.

The campaign is made by services.campaigns.campaign_run_now, through the same service as POST
/api/v1/campaigns/, and needs the same permission (results.add_campaign, which the
tpcbench-reporters group has); the orchestrator polls GET /api/v1/campaigns/?state=pending and
starts it. A press while a campaign is pending or running asks for nothing more. Who pressed
is kept as the campaign's admin log entry.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from webapp.results.services.campaigns import campaign_run_now

PERMISSION = "results.add_campaign"  # what the API's POST /api/v1/campaigns/ requires
REQUESTED = "Campaign requested; the orchestrator will start it within its poll interval."


def _when(moment) -> str:
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M %Z") if moment else "?"


@require_POST
def run_now(request: HttpRequest) -> HttpResponse:
    grid = reverse("dashboard:grid")
    if not request.user.is_authenticated:
        return redirect_to_login(grid, reverse("admin:login"))
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied("Requesting a campaign needs the results.add_campaign permission.")
    campaign, created = campaign_run_now(user=request.user)
    if created:
        messages.success(request, REQUESTED)
    elif campaign.state == "pending":
        messages.info(
            request,
            f"A campaign is already pending (requested {_when(campaign.created)}); "
            "no new one was requested.",
        )
    else:
        messages.info(
            request,
            f"A campaign is already running (started {_when(campaign.started)}); "
            "no new one was requested.",
        )
    return redirect(grid)

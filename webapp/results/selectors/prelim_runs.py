"""Reads of the preliminary runs (the paper's Figures 3 and 4): the latest, with their points."""

from webapp.results.models import PrelimRun


def prelim_runs(
    *, kind: str | None = None, uuid: str | None = None, limit: int = 20
) -> list[PrelimRun]:
    """The latest preliminary runs (of one kind, or the one `uuid`), newest first, with their
    points."""
    runs = PrelimRun.objects.select_related("node").prefetch_related("points")
    if kind:
        runs = runs.filter(kind=kind)
    if uuid:
        runs = runs.filter(uuid=uuid)
    return list(runs.order_by("-started", "-id")[:limit])

"""Counts of related rows as a correlated subquery, so a list is annotated in one query
rather than looped over (netbox's utilities/query.py count_related)."""

from django.db.models import Count, IntegerField, Model, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_related(model: type[Model], field: str, **filters: object) -> Coalesce:
    """How many `model` rows (matching `filters`) point at the outer row through `field`;
    0, not NULL, for none."""
    counted = (
        model.objects.filter(**{field: OuterRef("pk")}, **filters)
        .order_by()
        .values(field)
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)

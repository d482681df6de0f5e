"""Aggregates (grids, latency fit, stream comparison) cached until the data changes.

The key holds the DataVersion counter, which every write bumps (services, and signals for
admin edits), so a cached answer is never older than the data. Relative windows ('20d')
also key on the minute: their edge moves with the clock.
"""

import functools
import hashlib
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache
from django.db.models import F, QuerySet
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from webapp.results.compiled_sql import compiled_query
from webapp.results.models import Campaign, DataVersion, Lookup, Measurement, Node, Threshold

T = TypeVar("T")
SINGLETON = 1
TIMEOUT_SECONDS = 600


@compiled_query
def _version_rows() -> QuerySet:
    return DataVersion.objects.filter(pk=SINGLETON).values("version")


def data_version() -> int:
    """The counter (every cached request reads it: compiled once, no ORM work per request)."""
    rows = _version_rows()
    return (rows[0]["version"] if rows else 0) or 0


def data_changed() -> None:
    """Bump the counter (inside the writer's transaction: readers see it with the data)."""
    if not DataVersion.objects.filter(pk=SINGLETON).update(version=F("version") + 1):
        DataVersion.objects.get_or_create(pk=SINGLETON, defaults={"version": 1})


def lock_data_version() -> None:
    """Lock the counter's row until the transaction ends (made first if missing, at 0).

    Every write to the results holds this lock from its data_changed() to its commit, so a
    transaction that takes it first sees the data as of its turn: a check-then-write (the
    dashboard's "run now") cannot interleave with another. Portable: a row lock where there
    are row locks (PostgreSQL), and on SQLite the INSERT takes the one database write lock.
    """
    DataVersion.objects.bulk_create([DataVersion(pk=SINGLETON, version=0)], ignore_conflicts=True)
    list(DataVersion.objects.select_for_update().filter(pk=SINGLETON).values_list("pk"))


def cached_aggregate(prefix: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Cache a keyword-only selector's result by its arguments and the data version."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(function)
        def wrapper(**kwargs) -> T:
            window = str(kwargs.get("window", "latest")).strip().lower()
            minute = "" if window == "latest" else timezone.now().strftime("%Y%m%d%H%M")
            arguments = ",".join(f"{k}={kwargs[k]!r}" for k in sorted(kwargs))
            # Hashed: arguments come from query strings and may hold any character.
            digest = hashlib.sha256(arguments.encode("utf-8", "surrogatepass")).hexdigest()
            key = f"tpcbench:{prefix}:{data_version()}:{minute}:{digest}"
            found = cache.get(key)
            if found is None:
                found = function(**kwargs)
                cache.set(key, found, TIMEOUT_SECONDS)
            return found

        wrapper.uncached = function
        return wrapper

    return decorate


@receiver(post_save, sender=Threshold)
@receiver(post_delete, sender=Threshold)
@receiver(post_save, sender=Campaign)
@receiver(post_delete, sender=Campaign)
@receiver(post_save, sender=Measurement)
@receiver(post_delete, sender=Measurement)
@receiver(post_save, sender=Lookup)
@receiver(post_delete, sender=Lookup)
@receiver(post_save, sender=Node)
@receiver(post_delete, sender=Node)
def _model_changed(**kwargs) -> None:
    data_changed()

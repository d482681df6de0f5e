"""The data version: what cached aggregates are keyed by."""

from django.db import models


class DataVersion(models.Model):
    """A counter bumped by every write; cached aggregates are keyed by it (results.cache)."""

    version = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"data version {self.version}"

"""What the uuid-keyed ingests of baselines and preliminary runs share: whether a payload
was stored, and the conflict of a uuid re-used for other content."""

import uuid as uuid_lib
from dataclasses import dataclass
from typing import Any


class UuidConflict(Exception):
    """A baseline or preliminary run with this uuid exists with different content."""


@dataclass(frozen=True)
class Stored:
    """What became of a payload: the item, and whether this call stored it (else it was)."""

    item: Any
    created: bool


def same_or_conflict(kind: str, uuid: uuid_lib.UUID, stored: tuple, incoming: tuple) -> None:
    if stored != incoming:
        raise UuidConflict(
            f"{kind} {uuid} already exists with different content; a new one needs a new uuid"
        )

"""The column types the store's tables share, without the ORM: a timestamp in UTC and a
member of a closed set. The table models (:mod:`govern.store.models`) and the read side's
Core tables (:mod:`govern.store.schema`) both use these.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime, Dialect, String
from sqlalchemy.types import TypeDecorator

from govern.store.location import as_utc


def utcnow() -> datetime:
    """Now, in UTC (timezone-aware)."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and read back aware, on every backend.

    SQLite keeps no offset: a commit dated 23:30+05:00 would come back as 23:30 UTC.
    Converting on the way in (and marking UTC on the way out) keeps 18:30Z everywhere.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


class ClosedSet(TypeDecorator[StrEnum]):
    """A member of one closed set (exclusions/states.py), stored as its plain string
    (``VARCHAR(length)``, as every such column always was) and read back as the member.

    Not SQLAlchemy's ``Enum``: that stores the member's name, and a native type on
    PostgreSQL; the stored values stay the strings the JSON contracts and SQL name.
    """

    impl = String
    cache_ok = True

    def __init__(self, members: type[StrEnum], length: int) -> None:
        super().__init__(length)
        self.members = members

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        # A member, or its string: a value outside the set is refused before it is stored.
        return None if value is None else self.members(value).value

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        # What a column is compared with is text (a LIKE pattern, a filter's value): only
        # what is written must be a member.
        return self.impl_instance

    def process_result_value(self, value: str | None, dialect: Dialect) -> StrEnum | None:
        return None if value is None else self.members(value)

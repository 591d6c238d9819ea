"""govern.store.dbapi binds values as SQLAlchemy does, so the ORM reads what a poll wrote."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.dialects import sqlite

from govern.store.dbapi import Transaction
from govern.store.models import UTCDateTime

_SQLITE = sqlite.dialect()
_TYPE = UTCDateTime().dialect_impl(_SQLITE)
_BIND = _TYPE.bind_processor(_SQLITE)
_RESULT = _TYPE.result_processor(_SQLITE, None)
_offsets = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
_moments = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=_offsets
)


def _tx(dialect: str) -> Transaction:
    connection: Any = None  # values only: no statement is run
    return Transaction(connection, dialect)


@given(_moments)
def test_a_timestamp_is_bound_as_sqlalchemy_binds_it_on_sqlite(moment: datetime) -> None:
    assert _BIND is not None
    assert _tx("sqlite").when(moment) == _BIND(moment)


@given(_moments)
def test_a_timestamp_reads_back_as_the_orm_reads_it(moment: datetime) -> None:
    assert _RESULT is not None
    stored = _tx("sqlite").when(moment)
    assert Transaction.read_when(stored) == _RESULT(stored) == moment.astimezone(UTC)


def test_postgresql_gets_aware_datetimes_and_none_stays_none() -> None:
    moment = datetime(2026, 6, 1, 12, tzinfo=timezone(timedelta(hours=5)))
    bound = _tx("postgresql").when(moment)
    assert bound == moment
    assert bound.tzinfo is UTC
    assert _tx("sqlite").when(None) is None
    assert Transaction.read_when(None) is None
    assert Transaction.read_when(datetime(2026, 6, 1, 7)) == datetime(2026, 6, 1, 7, tzinfo=UTC)


def test_json_columns() -> None:
    value = {"files": [{"filename": "a.whl", "yanked": False, "size": None}]}
    assert Transaction.read_json(_tx("sqlite").json(value)) == value
    assert Transaction.read_json(value) == value  # psycopg decodes JSON itself

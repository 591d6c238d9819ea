"""Core statements on the models' tables, in bulk: the store's queries share these.

A model's table (SQLModel sets ``__table__``; its types do not say so), an ``IN`` list in
chunks (SQLite bounds the parameters of a statement), an executemany insert of dicts and
an executemany update by primary key. The models' column types bind and read the values
(timestamps in UTC, JSON), so rows go in and come out as the ORM would hold them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol, cast

from sqlalchemy import Connection, Row, Table, bindparam, insert, update
from sqlalchemy.sql import ColumnElement, Select

if TYPE_CHECKING:
    from sqlmodel import SQLModel

#: Rows as a query returns them, named by column.
Rows = Sequence[Row[*tuple[Any, ...]]]

CHUNK = 500  # values per IN list


class Reader(Protocol):
    """What the read side queries through: a Core connection, or an ORM session (the
    pages, which hold one per request); both run Core statements."""

    def execute(self, statement: Any, /) -> Any: ...


def record(row: Sequence[Any], table: Table, start: int = 0) -> Any:
    """The columns of ``table`` in ``row`` from position ``start``, as an object whose
    attributes are the column names (read as the ORM's row objects are); None when its
    primary key is null (an outer join that found nothing)."""
    names = table.columns.keys()
    values = row[start : start + len(names)]
    found = dict(zip(names, values, strict=True))
    if all(found.get(key.name) is None for key in table.primary_key.columns):
        return None
    return SimpleNamespace(**found)


def records(row: Sequence[Any], *tables: Table) -> tuple[Any, ...]:
    """``row`` of ``select(*tables)`` split into one :func:`record` per table."""
    out = []
    start = 0
    for table in tables:
        out.append(record(row, table, start))
        start += len(table.columns)
    return tuple(out)


def table(model: type[SQLModel]) -> Table:
    """The Core table of a table model."""
    return cast(Table, model.__table__)  # type: ignore[attr-defined]


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    """``items`` in slices of ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def where_in(
    conn: Connection,
    query: Select[*tuple[Any, ...]],
    column: ColumnElement[Any],
    values: Sequence[Any],
) -> Rows:
    """Every row of ``query`` whose ``column`` is one of ``values`` (in chunks)."""
    found: list[Row[*tuple[Any, ...]]] = []
    for chunk in chunks(values):
        found.extend(conn.execute(query.where(column.in_(chunk))))
    return found


def insert_rows(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """One executemany insert: every dict has the same keys (none: nothing is run)."""
    if rows:
        conn.execute(insert(table), list(rows))


def update_rows(conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """One executemany update by primary key: each dict has ``id`` and the columns to set
    (the same ones in every dict)."""
    if not rows:
        return
    statement = update(table).where(table.c.id == bindparam("row_id"))
    conn.execute(
        statement,
        [{"row_id" if key == "id" else key: value for key, value in row.items()} for row in rows],
    )

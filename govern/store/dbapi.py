"""The store through its DB-API driver alone: the hot path of ``govern poll``.

A poll writes thousands of rows of a few kinds (releases, candidates, events, index
pages) and reads them back by key; it needs no ORM, and importing SQLAlchemy and
SQLModel costs more than a small poll does (``bench/README.md``). :class:`RawStore`
runs plain SQL on the connection of either backend:

- :func:`open_sqlite` opens a SQLite file with :mod:`sqlite3` alone, with the settings
  of :mod:`govern.store.db` (:data:`~govern.store.location.SQLITE_PRAGMAS`), and only when
  the file is already at :data:`~govern.store.location.SCHEMA_REVISION`; anything else
  (a missing file, an older schema, a URL it does not read) returns None, and the caller
  opens the full :class:`~govern.store.db.Store`, which migrates or explains.
- :meth:`RawStore.of` borrows the engine's connections of an open ``Store`` (SQLite or
  PostgreSQL), so that the same statements run on both backends (the poll's tests run
  on both).

The tables are SQLModel's (:mod:`govern.store.models`, migrated by Alembic); values are
bound as SQLAlchemy stores them, so either side reads what the other wrote:
timestamps are UTC (on SQLite the text ``YYYY-MM-DD HH:MM:SS.ffffff``, as SQLAlchemy's
``DATETIME`` writes it), JSON columns are ``json.dumps`` text. Statements are written
with ``?`` placeholders; on PostgreSQL (psycopg) they become ``%s``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from govern.errors import StoreError
from govern.store.location import (
    SCHEMA_REVISION,
    SQLITE_PRAGMAS,
    advisory_key,
    as_utc,
    refused,
    sqlite_path,
    unusable,
)

if TYPE_CHECKING:
    from govern.store.db import Store


def expand(statement: str, count: int) -> str:
    """``statement`` with its ``(?*)`` made ``(?, ?, ...)``, for an ``IN`` of ``count`` values.

    Statements stay constant text; only placeholders are added, and values always bound.
    """
    return statement.replace("(?*)", "(" + ", ".join("?" * count) + ")")


class Transaction:
    """One transaction on one connection: statements, and values bound as the ORM binds them."""

    def __init__(self, connection: Any, dialect: str) -> None:
        self._connection = connection
        self.dialect = dialect
        self._sqlite = dialect == "sqlite"

    def _sql(self, statement: str) -> str:
        if self._sqlite:
            return statement
        if "%" in statement:  # psycopg would read it as a placeholder: bind the value instead
            raise ValueError(f"a statement for both backends holds a '%': {statement[:60]!r}")
        return statement.replace("?", "%s")

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        cursor = self._connection.cursor()
        try:
            cursor.execute(self._sql(statement), tuple(params))
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def execute(self, statement: str, params: Sequence[Any] = ()) -> None:
        """One statement that returns nothing."""
        cursor = self._connection.cursor()
        try:
            cursor.execute(self._sql(statement), tuple(params))
        finally:
            cursor.close()

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        """One statement for many rows (one prepared statement, a batch of parameters)."""
        batch = [tuple(row) for row in rows]
        if not batch:
            return
        cursor = self._connection.cursor()
        try:
            cursor.executemany(self._sql(statement), batch)
        finally:
            cursor.close()

    def lock(self, name: str) -> None:
        """Serialise writers that share ``name`` (SQLite's BEGIN IMMEDIATE already does)."""
        if not self._sqlite:
            self.execute("SELECT pg_advisory_xact_lock(?)", (advisory_key(name),))

    # -- values, as SQLAlchemy binds and reads them ---------------------------------

    def when(self, value: datetime | None) -> Any:
        """A timestamp to bind."""
        if value is None:
            return None
        utc = as_utc(value)
        if not self._sqlite:
            return utc
        # SQLAlchemy's "%Y-%m-%d %H:%M:%S.%f", by isoformat (strftime is slower).
        return utc.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")

    def json(self, value: Any) -> str:
        """A JSON column's value to bind."""
        return json.dumps(value)

    @staticmethod
    def read_when(value: Any) -> datetime | None:
        """A timestamp read back, aware and in UTC."""
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        return as_utc(value)

    @staticmethod
    def read_json(value: Any) -> Any:
        """A JSON column read back (psycopg decodes it already; SQLite hands back text)."""
        return json.loads(value) if isinstance(value, str | bytes) else value


class RawStore:
    """Transactions on the store's database through its driver, without an ORM."""

    def __init__(
        self,
        connect: Callable[[], Any],
        dialect: str,
        display_url: str,
        errors: tuple[type[BaseException], ...],
        *,
        operational: tuple[type[BaseException], ...] = (),
        release: Callable[[Any], None] | None = None,
        close: Callable[[], None] | None = None,
    ) -> None:
        """``errors``: the driver's base error; ``operational``: the ones that mean the
        database cannot be used (locked, unreachable), rather than a refused statement."""
        self._connect = connect
        self._release = release or (lambda connection: connection.close())
        self.dialect = dialect
        self.display_url = display_url
        self._errors = errors
        self._operational = operational
        self._close = close

    @classmethod
    def of(cls, store: Store) -> RawStore:
        """The pooled connections of an open ``Store`` (its schema checked first)."""
        store.ensure_schema()
        engine = store.engine
        dbapi = engine.dialect.dbapi
        errors: tuple[type[BaseException], ...] = (dbapi.Error,) if dbapi is not None else ()
        operational: tuple[type[BaseException], ...] = (
            (dbapi.OperationalError,) if dbapi is not None else ()
        )
        return cls(
            engine.raw_connection,
            engine.dialect.name,
            store.display_url,
            errors,
            operational=operational,
        )

    def close(self) -> None:
        """Close what this store opened itself (nothing when it borrows a ``Store``'s)."""
        if self._close is not None:
            self._close()
            self._close = None

    def __enter__(self) -> RawStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[Transaction]:
        """One transaction: committed at the end, rolled back on any error.

        ``write=True`` takes SQLite's write lock at BEGIN (as ``Store.session`` does), so
        what the transaction reads cannot change before it writes. The connection is in
        autocommit mode on SQLite (the store's and :func:`open_sqlite`'s), so BEGIN and
        COMMIT are explicit there; psycopg opens a transaction by itself.
        """
        try:
            connection = self._connect()
        except self._errors as exc:
            raise self._failure(exc) from None
        try:
            done = Transaction(connection, self.dialect)
            sqlite = self.dialect == "sqlite"
            if sqlite:
                done.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield done
                done.execute("COMMIT") if sqlite else connection.commit()
            except BaseException:
                # Also after a failed COMMIT: SQLite keeps the transaction open, and the
                # connection serves the command's next transaction.
                with contextlib.suppress(*self._errors):
                    done.execute("ROLLBACK") if sqlite else connection.rollback()
                raise
        except self._errors as exc:
            raise self._failure(exc) from None
        finally:
            self._release(connection)

    def _failure(self, exc: BaseException) -> StoreError:
        if isinstance(exc, self._operational):
            return unusable(self.display_url, exc)
        return refused(self.display_url, exc)


def open_sqlite(url: str) -> RawStore | None:
    """A SQLite file at the current schema, opened with :mod:`sqlite3` alone; else None.

    None means "open the full store instead": the URL is not a plain SQLite file, the
    file does not exist yet (the full store creates and migrates it), or its schema is
    at another revision (the full store migrates an empty one and explains the rest).
    One connection serves every transaction of the command.
    """
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return None
    try:
        # mode=rw: never create a file here (a missing one goes to the full store).
        connection = sqlite3.connect(
            f"{path.as_uri()}?mode=rw", uri=True, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error:
        return None
    try:
        for pragma in SQLITE_PRAGMAS:
            connection.execute(pragma)
        revision = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        revision = []
    if revision != [(SCHEMA_REVISION,)]:
        connection.close()
        return None
    return RawStore(
        lambda: connection,
        "sqlite",
        url,
        (sqlite3.Error,),
        operational=(sqlite3.OperationalError,),
        release=lambda _connection: None,
        close=connection.close,
    )

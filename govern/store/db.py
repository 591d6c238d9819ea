"""Opening the store: the database URL, the engine, sessions, and the schema's revision.

Notes: docs/internals.md#store.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError

if TYPE_CHECKING:
    # Re-exported: the service names a store's session by this type, not by the ORM.
    from sqlmodel import Session as Session

from govern.errors import SchemaOutOfDate, StoreError
from govern.redact import redact as redact_text
from govern.redact import redact_secret_params
from govern.store import locks
from govern.store.location import (
    ENV_VAR,
    SCHEMA_REVISION,
    SQLITE_PRAGMAS,
    default_url,
    refused,
    resolve_url,
    unusable,
)

__all__ = [
    "BULK",
    "ENV_VAR",
    "SCHEMA_REVISION",
    "Connection",
    "SchemaState",
    "Store",
    "create_store_engine",
    "default_url",
    "migrations_dir",
    "open_store",
    "redact",
    "resolve_url",
]


def redact(url: str | URL) -> str:
    """The URL with its password hidden, for messages and logs."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url)
    except (ArgumentError, ValueError):
        return redact_text(str(url))
    # The query too: ?password=... (psycopg's connection parameters), ?sslpassword=...
    return redact_secret_params(parsed.render_as_string(hide_password=True))


def _normalise(url: str) -> URL:
    try:
        parsed = make_url(url)
        parsed.port  # noqa: B018  (a port that is not a number raises here, not later)
    except (ArgumentError, ValueError):
        raise StoreError(
            f"{redact(url)} is not a database URL",
            tip="Use sqlite:///path/to/govern.db or postgresql://user@host/dbname.",
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3, not psycopg2
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise StoreError(
            f"govern stores its data in SQLite or PostgreSQL, not {parsed.get_backend_name()}",
            tip="Use sqlite:///path/to/govern.db or postgresql://user@host/dbname.",
        )
    return parsed


def _sqlite_file(url: URL) -> Path | None:
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def _sqlite_folder(file: Path) -> None:
    """The folder of a SQLite file must exist: only the default one is created.

    A file in an existing folder is created (and migrated) on first use; a folder is
    never made for a path someone typed, where a typo would start a second, empty store
    silently (``govern poll`` then reported "0 projects").
    """
    folder = file.parent
    if folder.is_dir():
        return
    if folder.exists() or file != _default_file():
        raise StoreError(
            f"the folder of the SQLite database {file} does not exist"
            if not folder.exists()
            else f"{folder}, the folder of the SQLite database {file}, is not a folder",
            tip=f"Create the folder first, or pass --db (or set {ENV_VAR}) with a path "
            "in an existing folder.",
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create {folder}: {exc.strerror or exc}",
            tip=f"Pass --db with a writable path, or set {ENV_VAR}.",
        ) from None


def _default_file() -> Path | None:
    return _sqlite_file(make_url(default_url()))


def _configure_sqlite(engine: Engine) -> None:
    """WAL (readers never wait for the writer), foreign keys, and write transactions
    that take the write lock when they begin, so that a read-then-write sync can never
    interleave with another one (a deferred BEGIN would fail with "database is locked"
    at the first write instead of waiting)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        for pragma in SQLITE_PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        write = connection.get_execution_options().get("govern_write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def create_store_engine(url: str) -> Engine:
    """An engine for ``url`` (SQLite or PostgreSQL), configured for govern's transactions."""
    parsed = _normalise(url)
    if parsed.get_backend_name() == "sqlite":
        file = _sqlite_file(parsed)
        if file is not None:
            _sqlite_folder(file)
        engine = create_engine(parsed)
        _configure_sqlite(engine)
        return engine
    try:
        return create_engine(parsed, pool_pre_ping=True)
    except NoSuchModuleError:
        raise StoreError(
            "the PostgreSQL driver (psycopg) is not installed",
            tip="pip install 'govern[postgresql]'",
        ) from None
    except ModuleNotFoundError:
        raise StoreError(
            "the PostgreSQL driver (psycopg) is not installed",
            tip="pip install 'govern[postgresql]'",
        ) from None


def migrations_dir() -> Path:
    """The Alembic environment: inside the wheel, or ``migrations/`` in a checkout."""
    packaged = Path(__file__).resolve().parent.parent / "_migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations"


#: Execution options of a bulk insert or update: the ORM leaves None values out by
#: default, which splits one batch into a statement per distinct set of columns
#: (thousands for 10,000 rows); rendering NULLs keeps one executemany.
BULK = {"render_nulls": True}


@dataclass(frozen=True, slots=True)
class SchemaState:
    """Where a database stands against the migrations govern ships."""

    current: str | None  # None: no revision recorded
    head: str
    empty: bool  # no tables at all

    @property
    def up_to_date(self) -> bool:
        """Whether the database is at the newest revision."""
        return self.current == self.head


class Store:
    """An open database: the engine, and sessions for reading and for writing."""

    def __init__(self, url: str, *, upgrade: bool = True) -> None:
        self.url = url
        self.engine = create_store_engine(url)
        self._checked = False
        self._auto_upgrade = upgrade

    @property
    def display_url(self) -> str:
        """The URL with any password hidden."""
        return redact(self.engine.url)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def close(self) -> None:
        """Release the engine's connections."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema -------------------------------------------------------------------

    def _alembic_config(self, connection: Connection) -> Any:
        from alembic.config import Config

        # Alembic's messages go nowhere (the CLI reports the result), and never to the
        # sys.stdout captured when alembic was first imported (its default argument).
        config = Config(stdout=io.StringIO())
        config.set_main_option("script_location", str(migrations_dir()))
        config.attributes["connection"] = connection
        return config

    def _state(self, connection: Connection) -> SchemaState:
        from alembic.runtime.migration import MigrationContext
        from alembic.script import ScriptDirectory

        script = ScriptDirectory.from_config(self._alembic_config(connection))
        return SchemaState(
            current=MigrationContext.configure(connection).get_current_revision(),
            head=script.get_current_head() or "",
            empty=not set(inspect(connection).get_table_names()) - {"alembic_version"},
        )

    def schema_state(self) -> SchemaState:
        """The recorded revision, the newest shipped one, and whether the database is empty."""
        with self._connect() as connection, connection.begin():
            return self._state(connection)

    @contextlib.contextmanager
    def _migration_lock(self) -> Iterator[Connection]:
        """A write transaction that no other migration of this database runs beside.

        On SQLite, foreign keys are off while it runs, as Alembic's batch mode needs: it
        rebuilds a table by copying it and dropping the original, and dropping a table
        that other rows reference fails with them on. Every reference is checked before
        the commit instead (``PRAGMA foreign_key_check``).
        """
        with self._connect(write=True) as connection:
            sqlite = self.dialect == "sqlite"
            # Only outside a transaction does SQLite take this pragma: through the driver's
            # connection (autocommit), not SQLAlchemy's (which would begin one first).
            driver: Any = connection.connection.dbapi_connection if sqlite else None
            if driver is not None:
                driver.execute("PRAGMA foreign_keys=OFF")
            try:
                with connection.begin():
                    if not sqlite:
                        locks.migration(connection)
                    yield connection
                    if sqlite:
                        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
                        if broken:
                            raise StoreError(
                                f"the migration would leave {len(broken)} broken references "
                                f"(first: {tuple(broken[0])}); nothing was changed",
                                tip="Report this with `govern db current`'s output.",
                            )
            finally:
                if driver is not None:
                    driver.execute("PRAGMA foreign_keys=ON")

    def upgrade(self, revision: str = "head") -> None:
        """Migrate the schema to ``revision`` (one transaction; concurrent runs wait)."""
        from alembic import command

        with self._migration_lock() as connection:
            command.upgrade(self._alembic_config(connection), revision)
        self._checked = False

    def downgrade(self, revision: str) -> None:
        """Migrate the schema down to ``revision`` (``base`` drops every table)."""
        from alembic import command

        with self._migration_lock() as connection:
            command.downgrade(self._alembic_config(connection), revision)
        self._checked = False

    def ensure_schema(self) -> None:
        """Migrate an empty database; refuse one at another revision (once per Store).

        The check is repeated under the migration lock: several processes starting on
        one empty database migrate it once, and the others see the result.
        """
        if self._checked:
            return
        if self._recorded_revision() == SCHEMA_REVISION:
            self._checked = True
            return
        state = self.schema_state()
        if not state.up_to_date and state.current is None and self._auto_upgrade:
            from alembic import command

            with self._migration_lock() as connection:
                state = self._state(connection)
                if state.current is None and state.empty:
                    command.upgrade(self._alembic_config(connection), "head")
                    state = self._state(connection)
        if not state.up_to_date:
            raise self._out_of_date(state)
        self._checked = True

    def recheck_schema(self) -> None:
        """For a long-lived process (``govern daemon``): the schema is still this govern's.

        Another govern may have migrated the database (or emptied it) since the first
        check; that is an error here, never a reason to migrate again.
        """
        if self._recorded_revision() != SCHEMA_REVISION:
            raise self._out_of_date(self.schema_state())

    def _recorded_revision(self) -> str | None:
        """The revision in ``alembic_version``, read without Alembic (None if absent)."""
        try:
            with self._connect() as connection, connection.begin():
                if not inspect(connection).has_table("alembic_version"):
                    return None
                rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
        except DBAPIError:
            return None
        return str(rows[0][0]) if len(rows) == 1 else None

    def _out_of_date(self, state: SchemaState) -> SchemaOutOfDate:
        if state.current is None and state.empty:
            return SchemaOutOfDate(
                f"the database at {self.display_url} is empty",
                tip="Run `govern db upgrade` to create govern's tables.",
            )
        if state.current is None:
            return SchemaOutOfDate(
                f"the database at {self.display_url} holds tables but no govern revision",
                tip="Point --db at a database of its own for govern.",
            )
        return SchemaOutOfDate(
            f"the database at {self.display_url} is at revision {state.current}; "
            f"this govern needs {state.head}",
            tip="Run `govern db upgrade` (back up the database first).",
        )

    # -- sessions -----------------------------------------------------------------

    @contextlib.contextmanager
    def connection(self) -> Iterator[Connection]:
        """A read-only connection in a transaction, for queries that need no ORM."""
        self.ensure_schema()
        with self._connect() as connection, connection.begin():
            yield connection

    @contextlib.contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[Connection]:
        """A connection in one transaction, for Core statements: committed at the end,
        rolled back on any error; the database's errors are :class:`StoreError`.

        ``write=True`` takes SQLite's write lock at BEGIN, as :meth:`session` does.
        """
        self.ensure_schema()
        try:
            with self._connect(write=write) as connection, connection.begin():
                yield connection
        except DBAPIError as exc:
            raise refused(self.display_url, exc) from None

    @contextlib.contextmanager
    def _connect(self, *, write: bool = False) -> Iterator[Connection]:
        engine = self.engine.execution_options(govern_write=True) if write else self.engine
        try:
            with engine.connect() as connection:
                yield connection
        except OperationalError as exc:
            raise unusable(self.display_url, exc) from None

    @contextlib.contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """A session in one transaction: committed at the end, rolled back on any error.

        ``write=True`` takes SQLite's write lock at BEGIN, so that what the session
        reads cannot change before it writes.
        """
        from sqlmodel import Session  # the ORM only for the commands that need it

        self.ensure_schema()
        bind = self.engine.execution_options(govern_write=True) if write else self.engine
        try:
            with Session(bind, expire_on_commit=False) as session, session.begin():
                yield session
        except OperationalError as exc:
            raise unusable(self.display_url, exc) from None
        except DBAPIError as exc:
            raise refused(self.display_url, exc) from None


def open_store(
    cli: str | None = None,
    *,
    configured: str | None = None,
    environ: Mapping[str, str] | None = None,
    upgrade: bool = True,
) -> Store:
    """Open the store the options, environment and configuration point at."""
    return Store(resolve_url(cli, environ, configured), upgrade=upgrade)

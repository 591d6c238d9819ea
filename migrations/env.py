"""Alembic environment for govern's store.

govern runs migrations itself (``govern db upgrade``, or on first use of an empty
database) and hands Alembic the open connection in ``config.attributes``; run from the
``alembic`` command line (``alembic -c migrations/alembic.ini ...``) the URL comes from
``GOVERN_DATABASE_URL`` or ``-x db=URL``.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

import govern.store.models  # noqa: F401  (registers the tables on SQLModel.metadata)

target_metadata = SQLModel.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        # SQLite cannot ALTER most things: batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate over govern's connection, or over one opened from the URL."""
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from govern.store.db import create_store_engine, resolve_url

    url = resolve_url(context.get_x_argument(as_dictionary=True).get("db"))
    engine = create_store_engine(url)
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("govern's migrations run online only (they need the database's dialect)")
run_migrations_online()

"""The store's secrets: made once, kept in the store, never shown.

The one secret today is ``marker``: the key govern signs its markers with
(:class:`govern.forge.base.Seal`), so that a marker found on a forge is one this store's
govern wrote. It is random (32 bytes), made by the first run that needs it; several runs
at once on one PostgreSQL store make it once (an insert that yields to the row already
there), and every run reads the same one.
"""

from __future__ import annotations

import importlib
import secrets
from datetime import UTC, datetime

from sqlalchemy import select

from govern.store.core import table
from govern.store.db import Store
from govern.store.models import StoreSecret

__all__ = ["MARKER", "secret"]

MARKER = "marker"  # the secret markers are signed with
_BYTES = 32


def secret(store: Store, name: str = MARKER) -> bytes:
    """The store's secret ``name``, made (random) the first time it is asked for."""
    rows = table(StoreSecret)
    query = select(rows.c.value).where(rows.c.name == name)
    with store.transaction() as connection:
        found = connection.execute(query).scalar_one_or_none()
    if found is None:
        made = {"name": name, "value": secrets.token_hex(_BYTES), "created_at": datetime.now(UTC)}
        with store.transaction(write=True) as connection:
            # The store's own dialect only (PostgreSQL's takes about 20 ms to import).
            name_of = "postgresql" if connection.dialect.name == "postgresql" else "sqlite"
            dialect = importlib.import_module(f"sqlalchemy.dialects.{name_of}")
            # Another run may have made it meanwhile: its row stays, and is the one read.
            connection.execute(dialect.insert(rows).values(made).on_conflict_do_nothing())
            found = connection.execute(query).scalar_one()
    return bytes.fromhex(found)

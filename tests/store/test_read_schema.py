"""The read side's Core tables (govern/store/schema.py) are the models' tables, column for
column: the file is written from the models, and this test fails when they drift.

To write it again after a change to govern/store/models.py::

    GOVERN_WRITE_SCHEMA=1 .venv/bin/python -m pytest tests/store/test_read_schema.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from enum import StrEnum
from pathlib import Path

import pytest
from sqlalchemy import Boolean, Date, Float, Integer, MetaData, String, Text
from sqlalchemy.types import JSON, TypeDecorator, TypeEngine

import govern.store.models  # noqa: F401  (the models register their tables)
from govern.store import schema
from govern.store.columns import ClosedSet, UTCDateTime

SCHEMA = Path(schema.__file__)

HEADER = '''"""The store's tables in SQLAlchemy Core, for the read side: the commands that only read
(``govern status``, ``history``, ``dashboard``) query these without importing the ORM,
SQLModel or pydantic, which cost more than the rest of such a command.

Written from the table models (govern/store/models.py, the schema's one home) by
tests/store/test_read_schema.py, which fails when the two drift; do not edit by hand:
``GOVERN_WRITE_SCHEMA=1 .venv/bin/python -m pytest tests/store/test_read_schema.py``.
Only what a query needs is here: columns, their types, nullability and primary keys (the
indexes and constraints live in the models and the migrations).
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, Date, Float, Integer, MetaData, String, Table, Text

from govern.exclusions import states
from govern.store.columns import ClosedSet, UTCDateTime

metadata = MetaData()
'''


def _enum(members: type[StrEnum]) -> str:
    assert members.__module__ == "govern.exclusions.states", members  # closed sets' home
    return f"states.{members.__name__}"


def _type(column_type: TypeEngine[object]) -> str:
    if isinstance(column_type, ClosedSet):
        return f"ClosedSet({_enum(column_type.members)}, {column_type.length})"
    if isinstance(column_type, UTCDateTime):
        return "UTCDateTime()"
    if isinstance(column_type, TypeDecorator):  # SQLModel's AutoString: its String
        return _type(column_type.impl_instance)
    if isinstance(column_type, JSON):
        return "JSON()"
    if isinstance(column_type, Text):
        return "Text()"
    if isinstance(column_type, String):
        return f"String({column_type.length})" if column_type.length else "String()"
    for simple in (Boolean, Date, Float, Integer):
        if isinstance(column_type, simple):
            return f"{simple.__name__}()"
    raise AssertionError(f"no Core form for {column_type!r}")


def render(metadata: MetaData) -> str:
    """The schema module's text for ``metadata``'s tables."""
    parts = [HEADER]
    for table in sorted(metadata.tables.values(), key=lambda t: t.name):
        name = table.name
        lines = [f"\n{name} = Table(\n    {name!r},\n    metadata,"]
        for column in table.columns:
            options = ""
            if column.primary_key:
                options += ", primary_key=True"
            if not column.nullable and not column.primary_key:
                options += ", nullable=False"
            if column.key != column.name:  # read by its attribute's name, stored under another
                options += f", key={column.key!r}"
            lines.append(f"    Column({column.name!r}, {_type(column.type)}{options}),")
        lines.append(")\n")
        parts.append("\n".join(lines))
    return "".join(parts)


def test_the_read_sides_tables_are_the_models_tables() -> None:
    from sqlmodel import SQLModel

    wanted = render(SQLModel.metadata)
    if os.environ.get("GOVERN_WRITE_SCHEMA"):
        SCHEMA.write_text(wanted, encoding="utf-8")
        subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(SCHEMA)], check=False)
        pytest.skip("govern/store/schema.py written: run the test again")
    assert render(schema.metadata) == wanted, (
        "govern/store/schema.py no longer matches the models: "
        "GOVERN_WRITE_SCHEMA=1 .venv/bin/python -m pytest tests/store/test_read_schema.py"
    )


def test_every_model_table_is_on_the_read_side_with_the_same_columns() -> None:
    from sqlmodel import SQLModel

    assert set(schema.metadata.tables) == set(SQLModel.metadata.tables)
    for name, table in SQLModel.metadata.tables.items():
        mirror = schema.metadata.tables[name]
        assert [c.name for c in mirror.columns] == [c.name for c in table.columns]
        assert [c.key for c in mirror.columns] == [c.key for c in table.columns]
        assert [c.nullable for c in mirror.columns] == [c.nullable for c in table.columns]


def test_the_read_side_imports_neither_the_orm_nor_pydantic() -> None:
    code = (
        "import sys, govern.store.schema; "
        "print(sorted(m for m in ('sqlmodel', 'pydantic', 'sqlalchemy.orm') if m in sys.modules))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert found.strip() == "[]"

"""What each lock held over time

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 18:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lock_pin",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("package", sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
        sa.Column("version", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("since_commit", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("until_commit", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
        sa.ForeignKeyConstraint(["source_id"], ["source.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_lock_pin_source_id", "lock_pin", ["source_id"])
    op.create_index("ix_lock_pin_package", "lock_pin", ["package", "version"])


def downgrade() -> None:
    op.drop_index("ix_lock_pin_package", table_name="lock_pin")
    op.drop_index("ix_lock_pin_source_id", table_name="lock_pin")
    op.drop_table("lock_pin")

"""Runs say what they tried; verdicts can be forgotten; annotations choose a strategy

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05 05:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every run recorded before was a candidate's (the server default fills them once;
    # the model writes the kind itself, so the default is dropped after).
    with op.batch_alter_table("verification") as batch:
        batch.add_column(
            sa.Column(
                "kind",
                sqlmodel.sql.sqltypes.AutoString(length=16),
                nullable=False,
                server_default="candidate",
            )
        )
        batch.add_column(
            sa.Column("version", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True)
        )
        batch.add_column(
            sa.Column("check_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True)
        )
    with op.batch_alter_table("verification") as batch:
        batch.alter_column("kind", server_default=None)
    with op.batch_alter_table("candidate") as batch:
        batch.add_column(sa.Column("forgotten_upto", sa.Integer(), nullable=True))
    with op.batch_alter_table("annotation") as batch:
        batch.add_column(
            sa.Column("strategy", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("annotation") as batch:
        batch.drop_column("strategy")
    with op.batch_alter_table("candidate") as batch:
        batch.drop_column("forgotten_upto")
    with op.batch_alter_table("verification") as batch:
        batch.drop_column("check_key")
        batch.drop_column("version")
        batch.drop_column("kind")

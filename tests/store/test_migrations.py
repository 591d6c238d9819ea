"""Migrations: empty to head and back to base on both backends; models and revisions agree."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from sqlalchemy import inspect
from sqlmodel import select

from govern.errors import SchemaOutOfDate, StoreError
from govern.exclusions.model import Kind, SubKind
from govern.exclusions.states import EventKind
from govern.store.db import SCHEMA_REVISION, Store, migrations_dir, redact, resolve_url

TABLES = {
    "repository",
    "source",
    "exclusion",
    "annotation",
    "event",
    "release",
    "candidate",
    "verification",
    "proposal",
    "index_page",
    "poll_run",
    "outbox",
    "store_secret",
    "lock_pin",
}


def _tables(store: Store) -> set[str]:
    with store.engine.connect() as connection:
        return set(inspect(connection).get_table_names()) - {"alembic_version"}


def test_upgrade_check_and_downgrade(database_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    with Store(database_url, upgrade=False) as store:
        state = store.schema_state()
        assert state.empty
        assert state.current is None
        store.upgrade()
        assert _tables(store) == TABLES
        assert store.schema_state().up_to_date
        assert store.schema_state().head == SCHEMA_REVISION  # the constant follows the scripts
        # The models and the migrations agree: autogenerate finds nothing to do.
        with store.engine.connect() as connection:
            config = Config(stdout=io.StringIO())
            config.set_main_option("script_location", str(migrations_dir()))
            config.attributes["connection"] = connection
            command.check(config)
        store.downgrade("base")
        assert _tables(store) == set()
        assert store.schema_state().current is None
        store.upgrade()  # and up again
        assert _tables(store) == TABLES


def test_an_empty_database_is_upgraded_on_first_use(database_url: str) -> None:
    with Store(database_url) as store, store.session() as session:
        assert session.get_bind().dialect.name in ("sqlite", "postgresql")
    with Store(database_url, upgrade=False) as store:
        assert store.schema_state().up_to_date


def test_an_older_revision_is_not_upgraded_silently(database_url: str) -> None:
    with Store(database_url) as store:
        store.ensure_schema()
        with store.engine.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0000'")
    with Store(database_url) as store, pytest.raises(SchemaOutOfDate) as raised:
        store.ensure_schema()
    assert "0000" in raised.value.message
    assert "govern db upgrade" in (raised.value.tip or "")


def test_a_recheck_refuses_a_store_migrated_or_emptied_meanwhile(database_url: str) -> None:
    """``govern daemon`` checks before each job; it never migrates in the middle of a run."""
    with Store(database_url) as store:
        store.ensure_schema()
        store.recheck_schema()  # unchanged: fine
        with store.engine.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
        with pytest.raises(SchemaOutOfDate, match="9999"):
            store.recheck_schema()
        with store.engine.begin() as connection:
            connection.exec_driver_sql(
                "UPDATE alembic_version SET version_num = %s"
                if store.dialect == "postgresql"
                else "UPDATE alembic_version SET version_num = ?",
                (SCHEMA_REVISION,),
            )
        store.downgrade("base")  # emptied: an error too, not a reason to create it again
        with pytest.raises(SchemaOutOfDate, match="is empty"):
            store.recheck_schema()
        assert store.schema_state().current is None


def test_migrations_down_and_up_with_data_in_the_store(database_url: str, tmp_path: Path) -> None:
    """A relaxed line links two exclusions (predecessor): dropping the table must still work."""
    from govern.config import Config
    from govern.service.track import TrackOptions, track

    root = tmp_path / "repo"
    root.mkdir()
    requirements = root / "requirements.txt"
    with Store(database_url) as store:
        for line in ("cupy-cuda13x < 14.1.0  # broke the image\n", "cupy-cuda13x != 14.1.0\n"):
            requirements.write_text(line, encoding="utf-8")
            track(store, root, None, config=Config(), options=TrackOptions())
        with store.engine.connect() as connection:
            linked = connection.exec_driver_sql(
                "SELECT count(*) FROM exclusion WHERE predecessor_id IS NOT NULL"
            ).scalar()
        assert linked == 1
        # Down past the revisions that rebuild tables on SQLite (0006 rebuilds exclusion),
        # and up again: every row and link is still there.
        store.downgrade("0005")
        store.upgrade()
        with store.engine.connect() as connection:
            rows = connection.exec_driver_sql(
                "SELECT count(*), count(predecessor_id) FROM exclusion"
            ).one()
            assert tuple(rows) == (2, 1)
            assert connection.exec_driver_sql("SELECT count(*) FROM event").scalar()
            if store.dialect == "sqlite":  # back on for the connection's next user
                assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        store.downgrade("base")
        assert store.schema_state().current is None
        assert not [t for t in inspect(store.engine).get_table_names() if t != "alembic_version"]


def test_url_resolution_order(tmp_path: object) -> None:
    env = {"GOVERN_DATABASE_URL": "postgresql://u@h/env"}
    assert resolve_url("sqlite:///cli.db", env, "sqlite:///conf.db") == "sqlite:///cli.db"
    assert resolve_url(None, env, "sqlite:///conf.db") == "postgresql://u@h/env"
    assert resolve_url(None, {}, "sqlite:///conf.db") == "sqlite:///conf.db"
    default = resolve_url(None, {}, None)
    assert default.startswith("sqlite:///")
    assert default.endswith("govern.db")
    assert resolve_url("some/file.db", {}, None).startswith("sqlite:////")  # a bare path


def test_default_is_in_the_user_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve_url(None, {}, None) == f"sqlite:///{tmp_path}/govern/govern.db"


def test_passwords_never_reach_messages() -> None:
    assert "s3cret" not in redact("postgresql://user:s3cret@db.internal/govern")
    shown = redact("postgresql+psycopg://user@db.internal/govern?password=s3cret&sslmode=require")
    assert "s3cret" not in shown
    assert "sslmode=require" in shown
    with pytest.raises(StoreError) as raised:
        Store("postgresql://user:s3cret@127.0.0.1:1/govern").ensure_schema()
    assert "s3cret" not in raised.value.message
    assert "s3cret" not in str(raised.value)


def test_an_unsupported_database_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="SQLite or PostgreSQL"):
        Store("mysql://u@h/db")


def test_events_are_append_only(database_url: str) -> None:
    from datetime import UTC, datetime

    from govern.store.models import AppendOnly, Event, Repository, StoredExclusion, StoredSource

    now = datetime(2026, 1, 1, tzinfo=UTC)
    with Store(database_url) as store:
        with store.session(write=True) as session:
            repo = Repository(name="r", root="/r", created_at=now)
            session.add(repo)
            session.flush()
            assert repo.id is not None
            source = StoredSource(
                repository_id=repo.id,
                path="r.txt",
                format="requirements",
                first_seen_at=now,
                last_seen_at=now,
            )
            session.add(source)
            session.flush()
            assert source.id is not None
            row = StoredExclusion(
                key="k",
                repository_id=repo.id,
                source_id=source.id,
                package="p",
                clause="<1",
                kind=Kind.CAP,
                sub_kind=SubKind.EXACT,
                requirement="p<1",
                line=1,
                first_seen_at=now,
            )
            session.add(row)
            session.flush()
            assert row.id is not None
            session.add(Event(exclusion_id=row.id, kind=EventKind.ADDED, at=now, recorded_at=now))

        def change() -> None:
            with store.session(write=True) as session:
                session.exec(select(Event)).one().kind = EventKind.REMOVED

        def delete() -> None:
            with store.session(write=True) as session:
                session.delete(session.exec(select(Event)).one())

        with pytest.raises(AppendOnly):
            change()
        with pytest.raises(AppendOnly):
            delete()
        with store.session() as session:
            assert session.exec(select(Event)).one().kind == "added"

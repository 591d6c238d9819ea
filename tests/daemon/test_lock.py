"""One daemon per store: a lock file on SQLite, an advisory lock per schema on PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import POSTGRESQL, postgresql_schema
from sqlalchemy import create_engine, text

from govern.daemon.lock import DaemonRunning, LockLost, single_instance, sqlite_file
from govern.errors import StoreError, UsageError
from govern.store.db import Store
from govern.store.locks import advisory_key


@pytest.mark.parametrize(
    ("database", "expected"),
    [
        ("/var/lib/govern/govern.db", Path("/var/lib/govern/govern.db")),
        ("relative.db", Path("relative.db")),
        ("file:/tmp/g.db?mode=rwc", Path("/tmp/g.db")),
        ("file:/tmp/g.db", Path("/tmp/g.db")),
        ("file:shared?mode=memory&cache=shared", None),
        (":memory:", None),
        ("", None),
        (None, None),
    ],
)
def test_the_file_of_a_sqlite_store(database: str | None, expected: Path | None) -> None:
    assert sqlite_file(database) == expected


def test_a_second_daemon_on_a_store_is_refused_until_the_first_ends(database_url: str) -> None:
    with Store(database_url) as first, Store(database_url) as second:
        with single_instance(first) as held:
            held.check()
            with pytest.raises(DaemonRunning) as refused, single_instance(second):
                pass
            assert "another govern daemon holds this store" in refused.value.message
            if first.dialect == "sqlite":
                assert f"pid {os.getpid()}" in refused.value.message
        with single_instance(second) as again:  # released
            again.check()


def test_a_removed_lock_file_is_noticed(tmp_path: Path) -> None:
    with Store(f"sqlite:///{tmp_path / 'g.db'}") as store, single_instance(store) as held:
        lock = tmp_path / "g.db.daemon-lock"
        assert lock.read_text().strip() == str(os.getpid())
        lock.unlink()
        with pytest.raises(LockLost, match="removed or replaced"):
            held.check()


def test_an_in_memory_store_is_refused() -> None:
    store = Store("sqlite://")
    with store, pytest.raises(UsageError, match="in-memory"), single_instance(store):
        pass


@pytest.mark.postgresql
def test_stores_in_two_schemas_of_one_database_do_not_exclude_each_other() -> None:
    with postgresql_schema() as (one, _), postgresql_schema() as (other, _):
        first, second = Store(one), Store(other)
        with first, second, single_instance(first), single_instance(second) as held:
            held.check()


@pytest.mark.postgresql
def test_a_dropped_lock_connection_is_noticed() -> None:
    with postgresql_schema() as (url, schema), Store(url) as store, single_instance(store) as held:
        assert schema in held.what
        key = advisory_key(f"govern daemon {schema}") & 0xFFFFFFFFFFFFFFFF
        killer = create_engine(POSTGRESQL, isolation_level="AUTOCOMMIT")
        try:
            with killer.connect() as connection:
                ended = connection.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = "
                        "'advisory' AND classid = :high AND objid = :low AND objsubid = 1"
                    ),
                    {"high": key >> 32, "low": key & 0xFFFFFFFF},
                ).all()
        finally:
            killer.dispose()
        assert ended == [(True,)]
        with pytest.raises(LockLost, match="was lost"):
            held.check()
    # leaving the block with the connection gone raised nothing


def test_an_unreachable_database_is_a_store_error_not_a_crash() -> None:
    store = Store("postgresql+psycopg://postgres@127.0.0.1:9/test")
    with store, pytest.raises(StoreError, match="cannot use the database"), single_instance(store):
        pass

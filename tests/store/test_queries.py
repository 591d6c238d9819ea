"""The store's queries with hostile filters, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from webseed import NOW, seed

from govern.store.db import Store
from govern.store.history import detail, threads
from govern.store.queries import Filters, browse, exclusions, find

NUL = "\x00"


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Iterator[Store]:
    with Store(database_url) as opened:
        seed(opened, tmp_path, generated=12)
        yield opened


def test_a_nul_byte_in_a_filter_matches_nothing(store: Store) -> None:
    with store.session() as session:
        everything = exclusions(session, now=NOW)
        assert len(everything) == 13
        for filters in (
            {"packages": [f"cupy-cuda13x{NUL}"]},
            {"repositories": [NUL]},
            {"repositories": [f"vllm{NUL}"]},
            {"kinds": [f"cap{NUL}"]},
            {"states": [NUL]},
            {"owner": NUL},
        ):
            assert exclusions(session, now=NOW, **filters) == [], filters
        assert threads(session, query="cupy-cuda13x", now=NOW)
        assert threads(session, query=f"cupy-cuda13x{NUL}", now=NOW) == []
        assert threads(session, query=NUL, now=NOW) == []


def test_a_nul_byte_in_a_dashboard_filter_or_id_matches_nothing(store: Store) -> None:
    with store.session() as session:
        shown = browse(session, filters=Filters(), now=NOW, page=1, per_page=50)
        assert shown.total == 13
        key = shown.items[0].id
        assert find(session, key=key, now=NOW) is not None
        for name in ("repository", "package", "owner", "q"):
            odd = Filters(**{name: f"a{NUL}"})
            assert browse(session, filters=odd, now=NOW, page=1, per_page=50).total == 0, name
        assert find(session, key=f"{key}{NUL}", now=NOW) is None
        assert detail(session, key=NUL, now=NOW) is None

"""The store's queries with hostile filters, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from webseed import NOW, seed

from govern.store.db import Store
from govern.store.queries import exclusions, threads
from govern.web import views

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
        assert threads(session, "cupy-cuda13x", now=NOW)
        assert threads(session, f"cupy-cuda13x{NUL}", now=NOW) == []
        assert threads(session, NUL, now=NOW) == []


def test_a_nul_byte_in_a_dashboard_filter_or_id_matches_nothing(store: Store) -> None:
    with store.session() as session:
        shown = views.browse(session, views.Filters(), now=NOW, page=1, per_page=50)
        assert shown.total == 13
        key = shown.items[0].id
        assert views.find(session, key, now=NOW) is not None
        for name in ("repository", "package", "owner", "q"):
            odd = views.Filters(**{name: f"a{NUL}"})
            assert views.browse(session, odd, now=NOW, page=1, per_page=50).total == 0, name
        assert views.find(session, f"{key}{NUL}", now=NOW) is None
        assert views.detail(session, NUL, now=NOW) is None

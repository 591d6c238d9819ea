"""The store's marker secret: made once, the same for every run, never shown."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlmodel import select

from govern.forge.base import Seal
from govern.service.outbox import seal
from govern.store.db import Store
from govern.store.models import StoreSecret
from govern.store.secrets import MARKER, secret


def test_the_secret_is_made_once_and_read_by_every_run(database_url: str) -> None:
    # Several runs at once make one secret.
    with Store(database_url) as first, ThreadPoolExecutor(4) as pool:
        made = set(pool.map(lambda _i: secret(first), range(8)))
    with Store(database_url) as second:
        again = secret(second)
        with second.session() as session:
            rows = session.exec(select(StoreSecret)).all()
    assert made == {again}
    assert len(again) == 32
    assert [row.name for row in rows] == [MARKER]


def test_two_stores_sign_apart_and_the_secret_is_never_shown(tmp_path: object) -> None:
    with Store(f"sqlite:///{tmp_path}/a.db") as a, Store(f"sqlite:///{tmp_path}/b.db") as b:
        ours, theirs = seal(a), seal(b)
        assert ours.marker("proposal", "k") != theirs.marker("proposal", "k")
        assert ours.marker("proposal", "k") == seal(a).marker("proposal", "k")
        assert secret(a).hex() not in repr(ours)
        assert repr(Seal(b"s3cret")) == "Seal()"

"""What the dashboard refuses from a hostile client, on SQLite and PostgreSQL: NUL bytes in
filters and ids, token guessing, a signed-out session replayed; and text that would hide or
reorder itself (bidirectional controls) shown visibly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from webseed import NOW, seed

from govern.store.db import Store
from govern.web.app import create_app
from govern.web.limits import Throttle
from govern.web.security import Secrets
from govern.web.state import AppState

TOKEN = "govern-web-TOKEN-refusals-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, str, AppState]]:
    with Store(database_url) as store:
        key = seed(store, tmp_path, generated=5)
        state = AppState(
            store=store,
            secrets=Secrets(token=TOKEN),
            clock=lambda: NOW,
            throttle=Throttle(3, 60.0, clock=Clock()),
        )
        with TestClient(create_app(state)) as client:
            yield client, key, state


FILTERS = ("repository", "package", "kind", "state", "owner", "q", "page", "per_page")


def test_a_nul_byte_in_any_filter_or_id_is_a_400(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, _ = served
    nul = "cupy\x00"
    for path in ("/exclusions", "/api/v1/exclusions"):
        assert client.get(path, params={"package": "cupy-cuda13x"}).status_code == 200
        for name in FILTERS:
            answer = client.get(path, params={name: nul})
            assert answer.status_code == 400, (path, name, answer.text)
            assert "NUL" in answer.json()["detail"]
    for path in ("/api/v1/pending?limit=", "/debt?days=", "/api/v1/debt?days=", "/?x="):
        assert client.get(path + "%00").status_code == 400, path
    odd = quote(f"{key}\x00", safe="")
    for path in (f"/exclusions/{odd}", f"/api/v1/exclusions/{odd}"):
        assert client.get(path).status_code == 400, path
    for action in ("snooze", "owner", "acknowledge", "verify"):
        answer = client.post(f"/api/v1/exclusions/{odd}/{action}", headers=BEARER, json={})
        assert answer.status_code == 400, (action, answer.text)
        assert client.post(f"/exclusions/{odd}/{action}", data={}).status_code == 400
    # The exclusion itself is still there, and a plain id still finds it.
    assert client.get(f"/api/v1/exclusions/{key}").status_code == 200

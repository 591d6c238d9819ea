"""What the dashboard refuses from a hostile client, on SQLite and PostgreSQL: NUL bytes in
filters and ids, token guessing, a signed-out session replayed; and text that would hide or
reorder itself (bidirectional controls) shown visibly."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import bidi
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
def clock() -> Clock:
    return Clock()


@pytest.fixture
def served(
    database_url: str, tmp_path: Path, clock: Clock
) -> Iterator[tuple[TestClient, str, AppState]]:
    with Store(database_url) as store:
        key = seed(store, tmp_path, generated=5)
        state = AppState(
            store=store,
            secrets=Secrets(token=TOKEN),
            clock=lambda: NOW,
            throttle=Throttle(3, 60.0, clock=clock),
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


def _csrf(client: TestClient) -> str:
    import re

    found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/login").text)
    assert found
    return found.group(1)


def test_failed_sign_ins_are_throttled_per_client_and_logged_without_the_token(
    served: tuple[TestClient, str, AppState], clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    client, _, state = served
    csrf = _csrf(client)
    guesses = [f"guess-number-{n}-of-the-token" for n in range(3)]
    with caplog.at_level(logging.WARNING):
        for guess in guesses:
            answer = client.post("/login", data={"token": guess, "csrf": csrf})
            assert answer.status_code == 403
        # Past the limit: refused before the token is looked at, the right one too.
        clock.now += 30
        throttled = client.post(
            "/login", data={"token": TOKEN, "csrf": csrf}, follow_redirects=False
        )
        assert throttled.status_code == 429
        assert throttled.headers["retry-after"] == "30"
        assert "too many failed sign-ins" in throttled.text
        # Another address is not slowed down by this one's failures.
        with TestClient(create_app(state), client=("192.0.2.7", 4000)) as other:
            other_csrf = _csrf(other)
            signed = other.post(
                "/login", data={"token": TOKEN, "csrf": other_csrf}, follow_redirects=False
            )
            assert signed.status_code == 303
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "sign-in refused from testclient (3 failed in 60 s)" in logged
    assert "throttled for 30 s" in logged
    assert not any(guess in logged for guess in guesses)
    assert TOKEN not in logged
    # Once the oldest failures leave the window, the client may try again.
    clock.now += 31
    again = client.post("/login", data={"token": TOKEN, "csrf": csrf}, follow_redirects=False)
    assert again.status_code == 303


def test_wrong_bearer_tokens_are_throttled_but_missing_ones_do_not_count(
    served: tuple[TestClient, str, AppState], clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    client, key, _ = served
    url = f"/api/v1/exclusions/{key}/acknowledge"
    for _ in range(5):
        assert client.post(url).status_code == 401  # no token at all: not a guess
    with caplog.at_level(logging.WARNING):
        for n in range(3):
            wrong = {"Authorization": f"Bearer wrong-token-{n}"}
            assert client.post(url, headers=wrong).status_code == 401
    throttled = client.post(url, headers=BEARER)
    assert throttled.status_code == 429
    assert throttled.headers["retry-after"] == "60"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "API bearer token refused from testclient (3 failed in 60 s)" in logged
    assert "wrong-token" not in logged
    clock.now += 60
    assert client.post(url, headers=BEARER).status_code == 200


def test_signing_out_revokes_the_session_on_the_server(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, _ = served
    csrf = _csrf(client)
    signed = client.post("/login", data={"token": TOKEN, "csrf": csrf}, follow_redirects=False)
    assert signed.status_code == 303
    session = client.cookies["govern_session"]
    write = f"/exclusions/{key}/acknowledge"
    assert client.post(write, data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert "Sign out" in client.get("/").text
    out = client.post("/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert "govern_session" not in client.cookies
    # The old cookie, replayed: refused for writes, and the pages no longer see a session.
    client.cookies.set("govern_session", session)
    replayed = client.post(write, data={"csrf": csrf}, follow_redirects=False)
    assert replayed.status_code == 401
    assert "sign in" in replayed.text
    assert "Sign out" not in client.get("/").text
    # A new sign-in works as before.
    client.cookies.delete("govern_session")
    again = client.post("/login", data={"token": TOKEN, "csrf": csrf}, follow_redirects=False)
    assert again.status_code == 303
    assert client.post(write, data={"csrf": csrf}, follow_redirects=False).status_code == 303


def test_revoked_sessions_are_forgotten_once_they_would_have_expired() -> None:
    from govern.web.security import SESSION_SECONDS

    secrets = Secrets(token=TOKEN)
    first = secrets.new_session(now=1_000_000)
    assert secrets.revoke(first, now=1_000_100)
    assert not secrets.session_ok(first, now=1_000_200)
    assert not secrets.revoke(first, now=1_000_200)  # already ended
    assert not secrets.revoke("1.forged.mac", now=1_000_200)
    later = secrets.new_session(now=1_000_000 + SESSION_SECONDS)
    assert secrets.revoke(later, now=1_000_001 + SESSION_SECONDS)
    assert len(secrets.revoked) == 1  # the first one's entry expired with its session


def test_bidi_controls_from_files_and_queries_are_shown_visibly_on_pages(
    database_url: str, tmp_path: Path
) -> None:
    from govern.config import Config
    from govern.service.track import TrackOptions, track

    repo = bidi.repository(tmp_path / "app")
    with Store(database_url) as store:
        track(store, repo, None, config=Config(repository="example/app"), options=TrackOptions())
        state = AppState(store=store, secrets=Secrets(token=TOKEN), clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            key = client.get("/api/v1/exclusions").json()["items"][0]["id"]
            api = client.get(f"/api/v1/exclusions/{key}").json()["exclusion"]
            assert bidi.RLO in api["reason"]  # the API gives the data as it is
            pages = {
                "detail": client.get(f"/exclusions/{key}").text,
                "list": client.get("/exclusions", params={"q": "loader"}).text,
                "front": client.get("/").text,
                "query": client.get("/exclusions", params={"q": f"gnp{bidi.RLO}"}).text,
                "missing": client.get(f"/exclusions/{quote(bidi.RLO)}").text,
            }
    for name, page in pages.items():
        assert not set(page) & bidi.HIDDEN, name
    assert bidi.REASON_SHOWN.replace("<", "&lt;").replace(">", "&gt;") in pages["detail"]
    assert "@team&lt;U+200F&gt;" in pages["detail"]
    assert "numpy" in pages["list"]
    assert "@team&lt;U+200F&gt;" in pages["front"]  # overdue: on the front page
    assert 'value="gnp&lt;U+202E&gt;"' in pages["query"]
    assert "&lt;U+202E&gt;" in pages["missing"]

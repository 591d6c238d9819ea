"""Every error answer is an answer, on SQLite and PostgreSQL: a body that is valid JSON but no
text (a lone surrogate escape) is a 400 with the security headers, never a 500 and a
logged traceback; refused webhook deliveries are throttled per address like wrong tokens,
and nothing is kept per refused request; an unexpected error still carries the headers.

Signatures and tokens are the vendors' (GitHub ``X-Hub-Signature-256``:
https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries;
GitLab ``X-Gitlab-Token``: https://docs.gitlab.com/ee/user/project/integrations/webhooks.html;
Buildkite ``X-Buildkite-Token``: https://buildkite.com/docs/apis/webhooks).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlmodel import col, select
from webseed import NOW, seed

from govern.store.db import Store
from govern.store.models import StoredExclusion
from govern.web.app import create_app
from govern.web.limits import Throttle
from govern.web.security import HEADERS, Secrets
from govern.web.state import AppState

TOKEN = "govern-web-TOKEN-errors-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
GITHUB_SECRET = "gh-hook-" + "s" * 24
GITLAB_TOKEN = "gl-hook-" + "t" * 24
BUILDKITE_TOKEN = "bk-hook-" + "u" * 24
LIMIT = 10


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
        key = seed(store, tmp_path, generated=3)
        secrets = Secrets(
            token=TOKEN,
            github_webhook_secret=GITHUB_SECRET,
            gitlab_webhook_token=GITLAB_TOKEN,
            buildkite_webhook_token=BUILDKITE_TOKEN,
        )
        state = AppState(
            store=store,
            secrets=secrets,
            clock=lambda: NOW,
            throttle=Throttle(LIMIT, 60.0, clock=clock),
        )
        # Whatever the server raises comes back as its answer, as uvicorn would send it.
        with TestClient(create_app(state), raise_server_exceptions=False) as client:
            yield client, key, state


def _signed(body: bytes, secret: str = GITHUB_SECRET) -> dict[str, str]:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return {"X-GitHub-Event": "ping", "X-Hub-Signature-256": f"sha256={digest}"}


def _has_headers(answer: object) -> bool:
    headers = getattr(answer, "headers")  # noqa: B009 -- an httpx response
    return all(headers.get(name) == value for name, value in HEADERS.items())


LONE = b'"\\ud800"'  # valid JSON, but no UTF-8 text: a high surrogate alone


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/api/v1/exclusions/{key}/owner", b'{"owner": ' + LONE + b"}", BEARER),
        ("/api/v1/exclusions/{key}/snooze", b'{"until": ' + LONE + b"}", BEARER),
        ("/api/v1/exclusions/{key}/owner", b'{"owner": "x", ' + LONE + b": 1}", BEARER),
        ("/webhooks/gitlab", b'{"object_kind": ' + LONE + b"}", {"X-Gitlab-Token": GITLAB_TOKEN}),
        ("/webhooks/gitlab", b'{"a": [{"b": ' + LONE + b"}]}", {"X-Gitlab-Token": GITLAB_TOKEN}),
        (
            "/webhooks/buildkite",
            b'{"event": ' + LONE + b"}",
            {"X-Buildkite-Token": BUILDKITE_TOKEN},
        ),
        ("/webhooks/github", b'{"zen": ' + LONE + b"}", None),
    ],
    ids=["owner", "snooze", "owner-key", "gitlab", "gitlab-deep", "buildkite", "github"],
)
def test_a_lone_surrogate_in_a_json_body_is_a_400_with_the_headers(
    served: tuple[TestClient, str, AppState],
    caplog: pytest.LogCaptureFixture,
    path: str,
    body: bytes,
    headers: dict[str, str] | None,
) -> None:
    client, key, state = served
    sent = {"content-type": "application/json", **(headers or _signed(body))}
    with caplog.at_level(logging.DEBUG):
        answer = client.post(path.format(key=key), content=body, headers=sent)
    assert answer.status_code == 400, answer.text
    assert _has_headers(answer)
    assert "surrogate" in answer.text
    assert answer.headers["content-type"] == "application/json"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    with state.store.session() as session:  # nothing was written
        row = session.exec(select(StoredExclusion).where(col(StoredExclusion.key) == key)).one()
        assert (row.assigned_owner, row.snoozed_until) == (None, None)


def test_a_surrogate_pair_is_text_and_is_kept(served: tuple[TestClient, str, AppState]) -> None:
    client, key, _ = served
    body = b'{"owner": "@team \\ud83d\\ude00"}'  # an escaped emoji: a pair, so text
    answer = client.post(
        f"/api/v1/exclusions/{key}/owner",
        content=body,
        headers={**BEARER, "content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["value"] == "@team \U0001f600"
    # Malformed JSON is still FastAPI's own 422, with the headers.
    broken = client.post(
        f"/api/v1/exclusions/{key}/owner",
        content=b'{"owner": ',
        headers={**BEARER, "content-type": "application/json"},
    )
    assert broken.status_code == 422
    assert _has_headers(broken)


def test_refused_webhook_deliveries_are_throttled_and_nothing_is_kept_per_request(
    served: tuple[TestClient, str, AppState],
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, _, state = served
    body = b'{"zen": "hello"}'
    wrong = [
        ("/webhooks/github", _signed(body, secret="not-the-secret")),
        ("/webhooks/gitlab", {"X-Gitlab-Token": "not-the-token"}),
        ("/webhooks/buildkite", {"X-Buildkite-Token": "not-the-token"}),
        ("/webhooks/github", {}),  # unsigned: refused and counted all the same
    ]
    statuses: list[int] = []
    with caplog.at_level(logging.WARNING):
        for n in range(400):
            path, headers = wrong[n % len(wrong)]
            answer = client.post(path, content=body, headers=headers)
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert answer.headers["retry-after"] == "60"
                assert _has_headers(answer)
    assert statuses[:LIMIT] == [401] * LIMIT
    assert statuses[LIMIT:] == [429] * (400 - LIMIT)
    # One log line per counted refusal, none per throttled one; no secret in any.
    assert len([r for r in caplog.records if "webhook refused" in r.getMessage()]) == LIMIT
    assert "not-the-secret" not in caplog.text
    assert "not-the-token" not in caplog.text
    # Bounded: the throttle keeps at most LIMIT times for the address, and nothing else
    # grows with the requests.
    assert state.throttle.remembered() == LIMIT
    assert len(state.log) == 0
    # A correctly signed delivery from the same address is never slowed down.
    assert client.post("/webhooks/github", content=body, headers=_signed(body)).status_code == 200
    # Once the failures leave the window, a wrong one is a 401 again.
    clock.now += 61
    again = client.post("/webhooks/gitlab", content=body, headers={"X-Gitlab-Token": "nope"})
    assert again.status_code == 401
    assert state.throttle.remembered() == 1


def test_an_unexpected_error_is_a_500_with_the_headers(tmp_path: Path) -> None:
    """A store whose table is gone: the page fails, and its 500 still has the headers."""
    database = tmp_path / "govern.db"
    with Store(f"sqlite:///{database}") as store:
        seed(store, tmp_path / "seed", generated=0)
        with store.session(write=True) as session:
            session.execute(text("ALTER TABLE exclusion RENAME TO gone"))
        state = AppState(store=store, secrets=Secrets(), clock=lambda: NOW)
        with TestClient(create_app(state), raise_server_exceptions=False) as client:
            answer = client.get("/api/v1/exclusions")
    assert answer.status_code == 500
    assert answer.text == "Internal Server Error"
    assert _has_headers(answer)


def test_the_background_log_is_bounded(served: tuple[TestClient, str, AppState]) -> None:
    _, _, state = served
    for n in range(5000):
        state.log.append(f"verify k{n}: 1 started")
    assert len(state.log) <= 200
    assert state.log[-1] == "verify k4999: 1 started"
    assert json.dumps(list(state.log))  # still plain text

"""The dashboard over HTTP (in-process, Starlette's TestClient), on SQLite and PostgreSQL.

Pages, the JSON API, write actions (token, sessions, CSRF), escaping, security headers,
/healthz and /metrics. Browser tests with Debian's chromium are in ``test_browser.py``;
webhooks in ``test_webhooks.py``; the OpenAPI description is fuzzed in ``test_schema.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from webseed import HOSTILE, NOW, seed

from govern.store.db import Store
from govern.web.app import create_app
from govern.web.security import CSP, Secrets
from govern.web.state import AppState

TOKEN = "govern-web-TOKEN-0123456789"


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, str, Store]]:
    with Store(database_url) as store:
        key = seed(store, tmp_path, generated=200)
        state = AppState(store=store, secrets=Secrets(token=TOKEN), clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            yield client, key, store


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def test_the_front_page_lists_cupy_with_its_candidate_and_evidence(
    served: tuple[TestClient, str, Store],
) -> None:
    client, _, _ = served
    page = client.get("/")
    assert page.status_code == 200
    body = page.text
    assert "cupy-cuda13x" in body
    row = body[body.index('data-package="cupy-cuda13x"') :]
    row = row[: row.index("</tr>")]
    assert "14.1.1" in row
    assert "installed 14.1.1" in row
    assert "- cupy-cuda13x &lt; 14.1.0" in row
    assert "+ cupy-cuda13x != 14.1.0" in row  # the narrow change: the bad release stays out
    assert "actions/runs/9000001" in row
    assert page.headers["content-security-policy"] == CSP
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in CSP
    assert "<script" not in body.lower()


def test_no_page_computes_a_relaxation(
    served: tuple[TestClient, str, Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages and the API read the relaxation stored on the candidate."""
    from govern.edit import relax

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("relax() called on a page view")

    monkeypatch.setattr(relax, "relax", refuse)
    client, key, store = served
    page = client.get("/")
    assert page.status_code == 200
    assert "+ cupy-cuda13x != 14.1.0" in page.text
    first = next(
        i for i in client.get("/api/v1/pending").json()["items"] if i["exclusion"]["id"] == key
    )
    assert first["change"] == {
        "before": "cupy-cuda13x < 14.1.0",
        "after": "cupy-cuda13x != 14.1.0",
        "note": first["change"]["note"],
    }
    assert "14.1.0" in first["change"]["note"]
    for path in (f"/exclusions/{key}", f"/api/v1/exclusions/{key}", "/exclusions", "/debt"):
        assert client.get(path).status_code == 200, path
    # A candidate found since the last verification has none stored yet: said so.
    from sqlmodel import select

    from govern.store.models import Candidate
    from govern.store.pending import NOT_COMPUTED

    with store.session(write=True) as session:
        for candidate in session.exec(select(Candidate)):
            candidate.relaxation = None
    first = next(
        i for i in client.get("/api/v1/pending").json()["items"] if i["exclusion"]["id"] == key
    )
    assert first["change"] == {
        "before": "cupy-cuda13x < 14.1.0",
        "after": None,
        "note": NOT_COMPUTED,
    }


def test_the_api_pending_and_filters(served: tuple[TestClient, str, Store]) -> None:
    client, key, _ = served
    pending = client.get("/api/v1/pending").json()
    assert pending["total"] > len(pending["items"]) > 1
    verified = [item["verified"] for item in pending["items"]]
    assert verified == sorted(verified, reverse=True)  # verified first
    first = next(item for item in pending["items"] if item["exclusion"]["id"] == key)
    assert first["candidate"] == "14.1.1"
    assert first["evidence"]["installed"] == "14.1.1"
    assert first["change"]["after"] == "cupy-cuda13x != 14.1.0"
    everything = client.get("/api/v1/exclusions", params={"per_page": 200}).json()
    assert everything["total"] == 201
    assert everything["pages"] == 2
    caps = client.get("/api/v1/exclusions", params={"kind": "cap", "per_page": 200}).json()
    assert caps["total"] < everything["total"]
    assert {item["kind"] for item in caps["items"]} == {"cap"}
    one = client.get("/api/v1/exclusions", params={"package": "cupy-cuda13x"}).json()
    assert [item["id"] for item in one["items"]] == [key]
    overdue = client.get("/api/v1/exclusions", params={"state": "overdue"}).json()
    assert overdue["total"] > 0
    assert {item["state"] for item in overdue["items"]} == {"overdue"}
    owned = client.get("/api/v1/exclusions", params={"owner": "team-3"}).json()
    assert owned["total"] > 0
    assert all("team-3" in (item["owner"] or "") for item in owned["items"])
    searched = client.get("/api/v1/exclusions", params={"q": "pytest"}).json()
    assert [item["id"] for item in searched["items"]] == [key]  # the reason is searched
    literal = client.get("/api/v1/exclusions", params={"q": "%"}).json()
    assert literal["total"] == 0  # % is a character, not a wildcard
    assert client.get("/api/v1/exclusions", params={"kind": "nonsense"}).status_code == 422


def test_one_exclusion_page_shows_its_timeline(served: tuple[TestClient, str, Store]) -> None:
    client, key, _ = served
    page = client.get(f"/exclusions/{key}")
    assert page.status_code == 200
    timeline = page.text[page.text.index('id="timeline"') :]
    timeline = timeline[: timeline.index("</ol>")]
    for kind in ("added", "candidate-found", "verification-passed"):
        assert kind in timeline
    assert "imports pytest" in page.text
    detail = client.get(f"/api/v1/exclusions/{key}").json()
    assert [c["version"] for c in detail["candidates"]] == ["14.1.1"]
    assert detail["candidates"][0]["verifications"][0]["installed"] == "14.1.1"
    assert client.get("/exclusions/nope").status_code == 404
    assert client.get("/api/v1/exclusions/nope").status_code == 404


def test_a_held_proposal_shows_the_lock_tools_own_error(
    served: tuple[TestClient, str, Store],
) -> None:
    """Issue 25: a lock that cannot be regenerated holds the proposal, with the tool's own
    words on the exclusion's page (as text: a tool's output is data)."""
    from sqlmodel import select

    from govern.exclusions.states import EventKind
    from govern.store import events
    from govern.store.models import StoredExclusion

    client, key, store = served
    said = "uv lock could not regenerate uv.lock (exit status 1): No solution <b>found</b>"
    with store.session(write=True) as session:
        row = session.exec(select(StoredExclusion).where(StoredExclusion.key == key)).one()
        assert row.id is not None
        events.record(
            session, row.id, EventKind.PROPOSAL_HELD, {"version": "14.1.1", "why": said}, NOW
        )
    page = client.get(f"/exclusions/{key}").text
    timeline = page[page.index('id="timeline"') :]
    timeline = timeline[: timeline.index("</ol>")]
    assert "proposal-held" in timeline
    assert "No solution &lt;b&gt;found&lt;/b&gt;" in timeline


def test_the_exclusion_page_says_what_the_locks_installed_when(
    served: tuple[TestClient, str, Store],
) -> None:
    """Issue 25: what a lock of the repository held of the package (track --history)."""
    from datetime import timedelta

    from sqlmodel import select

    from govern.store.models import LockPin, StoredExclusion, StoredSource

    client, key, store = served
    assert "What the locks installed" not in client.get(f"/exclusions/{key}").text
    with store.session(write=True) as session:
        row = session.exec(select(StoredExclusion).where(StoredExclusion.key == key)).one()
        lock = StoredSource(
            repository_id=row.repository_id,
            path="<b>uv.lock</b>",
            format="uv.lock",
            first_seen_at=NOW,
            last_seen_at=NOW,
        )
        session.add(lock)
        session.flush()
        assert lock.id is not None
        for version, since, until in (
            ("14.1.0", NOW - timedelta(days=90), NOW - timedelta(days=30)),
            ("14.0.1", NOW - timedelta(days=30), None),
        ):
            session.add(
                LockPin(
                    source_id=lock.id,
                    package=row.package,
                    version=version,
                    since=since,
                    since_commit="a" * 40,
                    until=until,
                    until_commit="b" * 40 if until else None,
                )
            )
    page = client.get(f"/exclusions/{key}").text
    shown = page[page.index('id="locks"') :]
    shown = shown[: shown.index("</ul>")]
    assert "&lt;b&gt;uv.lock&lt;/b&gt;" in shown  # a path from the repository is text
    assert (
        f'<strong>14.1.0</strong> from <time datetime="{(NOW - timedelta(days=90)).isoformat()}'
        in shown
    )
    assert "(still held)" in shown


def test_repository_text_is_escaped_everywhere(served: tuple[TestClient, str, Store]) -> None:
    client, _, _ = served
    found = client.get("/api/v1/exclusions", params={"q": "owned", "per_page": 1}).json()
    key = found["items"][0]["id"]
    assert found["items"][0]["reason"] == HOSTILE
    for path in (f"/exclusions/{key}", "/exclusions?q=owned", "/"):
        body = client.get(path).text
        assert "<script>alert" not in body
        assert "<b>bold</b>" not in body
    assert (
        "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt;"
        in client.get(f"/exclusions/{key}").text
    )


def test_a_write_without_the_token_is_refused_before_its_body_is_read(
    served: tuple[TestClient, str, Store],
) -> None:
    """The write-token dependency runs before the body is validated: a client without the
    token learns nothing about what a valid body looks like (401, not 422)."""
    client, key, _ = served
    url = f"/api/v1/exclusions/{key}/snooze"
    assert client.post(url, json={"until": "not a date"}).status_code == 401
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert client.post(url, json={"until": "not a date"}, headers=good).status_code == 422


def test_writes_need_the_token(served: tuple[TestClient, str, Store]) -> None:
    client, key, _ = served
    snooze = {"until": "2026-09-01"}
    assert client.post(f"/api/v1/exclusions/{key}/snooze", json=snooze).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert (
        client.post(f"/api/v1/exclusions/{key}/snooze", json=snooze, headers=wrong).status_code
        == 401
    )
    good = {"Authorization": f"Bearer {TOKEN}"}
    answer = client.post(f"/api/v1/exclusions/{key}/snooze", json=snooze, headers=good)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": key, "action": "snooze", "value": "2026-09-01"}
    assert key not in [i["exclusion"]["id"] for i in client.get("/api/v1/pending").json()["items"]]
    past = client.post(
        f"/api/v1/exclusions/{key}/snooze", json={"until": "2020-01-01"}, headers=good
    )
    assert past.status_code == 400
    owner = client.post(f"/api/v1/exclusions/{key}/owner", json={"owner": "@gpu"}, headers=good)
    assert owner.json()["value"] == "@gpu"
    assert client.get(f"/api/v1/exclusions/{key}").json()["exclusion"]["owner"] == "@gpu"
    kinds = [e["kind"] for e in client.get(f"/api/v1/exclusions/{key}").json()["thread"]]
    assert "snoozed" in kinds
    assert "owner-assigned" in kinds
    missing = client.post("/api/v1/exclusions/nope/acknowledge", headers=good)
    assert missing.status_code == 404
    assert TOKEN not in missing.text


def test_forms_need_a_session_and_a_csrf_token(served: tuple[TestClient, str, Store]) -> None:
    client, key, _ = served
    page = client.get(f"/exclusions/{key}")
    csrf = _csrf(page.text)
    # No session: refused, nothing changes.
    refused = client.post(
        f"/exclusions/{key}/acknowledge", data={"csrf": csrf}, follow_redirects=False
    )
    assert refused.status_code == 401
    assert "sign in" in refused.text
    # A wrong token at sign-in.
    bad = client.post("/login", data={"token": "guess", "csrf": csrf}, follow_redirects=False)
    assert bad.status_code == 403
    # The right token gives a session; a form without the CSRF token is still refused.
    good = client.post("/login", data={"token": TOKEN, "csrf": csrf}, follow_redirects=False)
    assert good.status_code == 303
    assert "govern_session" in good.headers["set-cookie"]
    assert "httponly" in good.headers["set-cookie"].lower()
    assert "samesite=strict" in good.headers["set-cookie"].lower()
    forged = client.post(
        f"/exclusions/{key}/acknowledge", data={"csrf": "0" * 64}, follow_redirects=False
    )
    assert forged.status_code == 403
    done = client.post(
        f"/exclusions/{key}/acknowledge", data={"csrf": csrf}, follow_redirects=False
    )
    assert done.status_code == 303
    assert done.headers["location"] == f"/exclusions/{key}?done=acknowledge"
    kinds = [e["kind"] for e in client.get(f"/api/v1/exclusions/{key}").json()["thread"]]
    assert "acknowledged" in kinds


def test_a_form_is_refused_in_order_action_then_csrf_then_session(
    served: tuple[TestClient, str, Store],
) -> None:
    """The form's checks: an unknown action is 404 whatever else is wrong, then a forged
    CSRF token 403, then no session 401; each a refusal page with the security headers."""
    client, key, _ = served
    forged = {"csrf": "0" * 64}
    unknown = client.post(f"/exclusions/{key}/explode", data=forged, follow_redirects=False)
    assert unknown.status_code == 404
    assert "no such action: explode" in unknown.text
    assert unknown.headers["content-security-policy"] == CSP
    refused = client.post(f"/exclusions/{key}/snooze", data=forged, follow_redirects=False)
    assert refused.status_code == 403
    assert "the form expired or came from another site" in refused.text
    csrf = _csrf(client.get(f"/exclusions/{key}").text)
    unsigned = client.post(f"/exclusions/{key}/snooze", data={"csrf": csrf})
    assert unsigned.status_code == 401
    assert "sign in with the write token first" in unsigned.text
    logout = client.post("/logout", data=forged, follow_redirects=False)
    assert logout.status_code == 403


def test_a_read_only_dashboard_refuses_every_write(database_url: str, tmp_path: Path) -> None:
    with Store(database_url) as store:
        key = seed(store, tmp_path, generated=0)
        state = AppState(store=store, secrets=Secrets(), clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            answer = client.post(
                f"/api/v1/exclusions/{key}/acknowledge", headers={"Authorization": "Bearer x"}
            )
            assert answer.status_code == 403
            assert "read-only" in client.get("/").text
            page = client.get(f"/exclusions/{key}").text
            buttons = re.findall(r"<button [^>]*>", page)
            assert len(buttons) >= 5
            assert all(" disabled " in b and "Read-only" in b for b in buttons), buttons


def test_healthz_metrics_and_static(served: tuple[TestClient, str, Store]) -> None:
    client, _, _ = served
    assert client.get("/healthz").json()["status"] == "ok"
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    lines = [line for line in metrics.text.splitlines() if line and not line.startswith("#")]
    assert lines
    assert all(line.startswith("govern_") for line in lines)
    assert 'govern_exclusions{state="verified"}' in metrics.text
    assert re.search(r'govern_verifications_total\{conclusion="passed"\} 1\b', metrics.text)
    css = client.get("/static/app.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/debt").status_code == 200
    assert "<svg" in client.get("/debt").text


def test_healthz_is_503_when_the_store_cannot_answer(database_url: str) -> None:
    with Store(database_url) as store:
        state = AppState(store=store, secrets=Secrets(token=TOKEN), clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            assert client.get("/healthz").json()["status"] == "ok"
            with store.engine.begin() as connection:  # downgraded under a running server
                connection.execute(text("UPDATE alembic_version SET version_num = '0001'"))
            older = client.get("/healthz")
            with store.engine.begin() as connection:  # a store that lost its schema
                connection.execute(text("DROP TABLE alembic_version"))
            answer = client.get("/healthz")
    assert older.status_code == 503
    assert "schema 0001" in older.json()["error"]
    assert answer.status_code == 503
    assert answer.json()["status"] == "error"


@pytest.mark.parametrize("extra", [0, 3, 4])
def test_metrics_ages_match_the_store(database_url: str, tmp_path: Path, extra: int) -> None:
    import statistics

    from sqlmodel import select

    from govern.store.models import StoredExclusion, as_utc
    from govern.web.metrics import render

    with Store(database_url) as store:
        seed(store, tmp_path, generated=extra)
        with store.session() as session:
            ages = [
                (NOW - as_utc(e.first_seen_at)).total_seconds() / 86400
                for e in session.exec(select(StoredExclusion))
            ]
            text = render(session, now=NOW)
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith("govern_exclusion_age_days")
    }
    assert values["govern_exclusion_age_days_max"] == round(max(ages), 1)
    assert values["govern_exclusion_age_days_median"] == pytest.approx(
        statistics.median(ages), abs=0.11
    )


def test_odd_input_is_refused_never_a_server_error(
    served: tuple[TestClient, str, Store],
) -> None:
    client, key, _ = served
    body = b"{}"
    odd = client.post(
        "/webhooks/github",
        content=body,
        headers={b"X-Hub-Signature-256": "sha256=\u00e9".encode(), b"X-GitHub-Event": b"ping"},
    )
    assert odd.status_code == 401
    assert (
        client.get("/", headers={b"Cookie": "govern_session=1.a.\u00e9".encode()}).status_code
        == 200
    )
    page = client.get(f"/exclusions/{key}")
    login = client.post("/login", data={"token": "x", "csrf": "\u00e9"})
    assert login.status_code == 403
    assert page.status_code == 200
    everything = client.get("/api/v1/exclusions", params={"repository": "%"}).json()
    assert everything["total"] == 0  # % is a character in a repository name, not a wildcard
    some = client.get("/api/v1/exclusions", params={"repository": "example/app-1"}).json()
    assert some["total"] > 0


def test_a_verdict_is_taken_back_from_the_form_and_the_api(
    served: tuple[TestClient, str, Store],
) -> None:
    client, key, _ = served
    csrf = _csrf(client.get(f"/exclusions/{key}").text)
    assert client.post("/login", data={"token": TOKEN, "csrf": csrf}).status_code == 200
    form = {"csrf": csrf, "version": "14.1.1", "reason": "the runner lost its GPU mid-run"}
    done = client.post(f"/exclusions/{key}/forget", data=form, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == f"/exclusions/{key}?done=forget"
    detail = client.get(f"/api/v1/exclusions/{key}").json()
    forgotten = [e for e in detail["thread"] if e["kind"] == "verdict-forgotten"]
    assert len(forgotten) == 1
    assert forgotten[0]["detail"]["by"] == "dashboard"
    assert forgotten[0]["detail"]["reason"] == "the runner lost its GPU mid-run"
    assert forgotten[0]["detail"]["verdicts"] == ["passed"]
    assert detail["exclusion"]["state"] == "candidate"  # 14.1.1 is a candidate again
    # Nothing left to take back, and no reason: refused, nothing written.
    good = {"Authorization": f"Bearer {TOKEN}"}
    again = client.post(
        f"/api/v1/exclusions/{key}/forget",
        json={"version": "14.1.1", "reason": "twice"},
        headers=good,
    )
    assert again.status_code == 400
    assert "no verdict on" in again.json()["detail"]
    empty = client.post(
        f"/api/v1/exclusions/{key}/forget", json={"version": "14.1.1", "reason": ""}, headers=good
    )
    assert empty.status_code == 422
    thread = client.get(f"/api/v1/exclusions/{key}").json()["thread"]
    assert [e["kind"] for e in thread].count("verdict-forgotten") == 1

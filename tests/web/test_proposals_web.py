"""The dashboard's side of proposals: each proposal's state and link, its deliveries as the
outbox holds them (failed sends retried, dead ones waiting for a person), and "propose now"."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import col, select
from webseed import NOW, seed

from govern.exclusions.states import (
    OutboxAction,
    OutboxState,
    ProposalKind,
    ProposalState,
    State,
    Via,
)
from govern.store.db import Store
from govern.store.models import Outbox, Proposal, StoredAnnotation, StoredExclusion
from govern.store.outbox import troubled
from govern.web.app import create_app
from govern.web.security import Secrets
from govern.web.state import AppState

TOKEN = "govern-web-TOKEN-0123456789"
GOOD = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def served(database_url: str, tmp_path: Path) -> Iterator[tuple[TestClient, str, AppState]]:
    with Store(database_url) as store:
        key = seed(store, tmp_path, generated=3)
        state = AppState(store=store, secrets=Secrets(token=TOKEN), clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            yield client, key, state


def _propose(store: Store, key: str) -> None:
    """A pull request opened for the exclusion, with a push sent, a comment that keeps
    failing and a message that gave up."""
    with store.session(write=True) as session:
        exclusion = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.key) == key)
        ).one()
        proposal = Proposal(
            exclusion_id=exclusion.id or 0,
            kind=ProposalKind.PULL_REQUEST,
            dedupe_key=f"proposal:{key}:14.1.1",
            state=ProposalState.OPEN,
            new_clause="!=14.1.0",
            url="https://forge.example/octo-org/app/pull/7",
            created_at=NOW,
            via=Via.GITHUB,
            version="14.1.1",
            number=7,
        )
        session.add(proposal)
        session.flush()
        rows = [
            Outbox(
                dedupe_key=f"push:{key}",
                action=OutboxAction.PUSH,
                state=OutboxState.SENT,
                attempts=1,
            ),
            Outbox(
                dedupe_key=f"comment:{key}",
                action=OutboxAction.COMMENT,
                state=OutboxState.FAILED,
                attempts=3,
                last_error="GitHub answered 502 Bad Gateway",
                next_attempt_at=NOW + timedelta(minutes=8),
            ),
            Outbox(
                dedupe_key=f"mail:{key}",
                action=OutboxAction.REMIND_EMAIL,
                state=OutboxState.DEAD,
                attempts=8,
                last_error="SMTP 535 authentication failed",
            ),
        ]
        for row in rows:
            row.proposal_id = proposal.id
            row.created_at = NOW
            session.add(row)


def test_the_exclusion_page_shows_the_proposal_its_link_and_its_troubled_deliveries(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    _propose(state.store, key)
    page = client.get(f"/exclusions/{key}").text
    proposals = page[page.index("<h2>Proposals</h2>") : page.index("<h2>Actions</h2>")]
    assert "pull-request of 14.1.1 <strong>open</strong>" in proposals
    assert '<a href="https://forge.example/octo-org/app/pull/7"' in proposals
    assert ">#7</a>" in proposals
    assert "push: sent</li>" in proposals
    assert "comment: failed after 3 attempts" in proposals
    assert "GitHub answered 502 Bad Gateway" in proposals
    assert "retried after 2026-" in proposals
    assert "remind-email: dead after 8 attempts" in proposals
    assert "gave up: a person looks" in proposals
    detail = client.get(f"/api/v1/exclusions/{key}").json()
    (proposal,) = detail["proposals"]
    assert (proposal["state"], proposal["number"], proposal["version"]) == ("open", 7, "14.1.1")
    assert [(d["action"], d["state"], d["attempts"]) for d in proposal["deliveries"]] == [
        ("push", "sent", 1),
        ("comment", "failed", 3),
        ("remind-email", "dead", 8),
    ]
    assert proposal["deliveries"][1]["error"] == "GitHub answered 502 Bad Gateway"


def test_the_front_page_lists_failing_deliveries_with_the_exclusion_each_is_for(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    _propose(state.store, key)
    with state.store.session(write=True) as session:
        session.add(
            Outbox(
                dedupe_key="digest:app:2026-W01",
                action=OutboxAction.DIGEST_WEBHOOK,
                state=OutboxState.DEAD,
                attempts=2,
                created_at=NOW,
            )
        )
    with state.store.session() as session:
        exclusion = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.key) == key)
        ).one()
        total, listed = troubled(session)
    assert total == 3
    assert [(t.action, t.ref.key if t.ref else None) for t in listed] == [
        (OutboxAction.DIGEST_WEBHOOK, None),
        (OutboxAction.REMIND_EMAIL, key),
        (OutboxAction.COMMENT, key),
    ]
    ref = listed[1].ref
    assert ref is not None
    assert (ref.repository, ref.source, ref.line, ref.package, ref.clause) == (
        "github.com/vllm-project/vllm",
        "requirements/cuda.txt",
        exclusion.line,
        "cupy-cuda13x",
        exclusion.clause,
    )
    front = client.get("/").text
    deliveries = front[front.index('id="deliveries"') :]
    shown = html.escape(f"cupy-cuda13x {exclusion.clause}")
    assert re.search(
        rf'<a href="/exclusions/[^"]+">{re.escape(shown)}</a>: remind-email dead', deliveries
    )
    assert "repository: digest-webhook dead after 2 attempts" in deliveries


def test_propose_now_is_offered_only_for_a_verified_exclusion(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    page = client.get(f"/exclusions/{key}").text
    assert 'id="propose-now"' in page
    with state.store.session() as session:
        other = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.state) == State.HELD)
        ).first()
    assert other is not None
    assert 'id="propose-now"' not in client.get(f"/exclusions/{other.key}").text
    answer = client.post(f"/api/v1/exclusions/{other.key}/propose", headers=GOOD)
    assert answer.status_code == 409
    assert "not verified" in answer.text


def test_propose_now_needs_the_token_and_runs_the_proposer_in_the_background(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    assert client.post(f"/api/v1/exclusions/{key}/propose").status_code == 401
    answer = client.post(f"/api/v1/exclusions/{key}/propose", headers=GOOD)
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"id": key, "action": "propose", "value": "started"}
    deadline = time.monotonic() + 30
    while not any(line.startswith(f"propose {key}:") for line in state.log):
        assert time.monotonic() < deadline, state.log
        time.sleep(0.05)
    # The seeded repository has no git remote: the proposer ran and recorded a failure
    # (retried later), and nothing was sent.
    (said,) = [line for line in state.log if line.startswith(f"propose {key}:")]
    assert said == f"propose {key}: failed"
    with state.store.session() as session:
        assert session.exec(select(Outbox)).all() == []


def test_a_send_whose_answer_was_lost_is_shown_unconfirmed_not_sent(
    served: tuple[TestClient, str, AppState],
) -> None:
    """A reminder's chat webhook and email: one confirmed, one marked sent without an
    answer (a run died while sending it; the outbox does not send it again)."""
    client, key, state = served
    with state.store.session(write=True) as session:
        exclusion = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.key) == key)
        ).one()
        reminder = Proposal(
            exclusion_id=exclusion.id or 0,
            kind=ProposalKind.REMINDER,
            dedupe_key=f"reminder:{key}:14.1.1",
            state=ProposalState.OPEN,
            created_at=NOW,
            version="14.1.1",
        )
        session.add(reminder)
        session.flush()
        for action, result in (
            (OutboxAction.REMIND_WEBHOOK, {"unconfirmed": True, "attempts": 1}),
            (OutboxAction.REMIND_EMAIL, {"status": 250}),
        ):
            session.add(
                Outbox(
                    dedupe_key=f"{action}:{key}",
                    action=action,
                    proposal_id=reminder.id,
                    state=OutboxState.SENT,
                    attempts=1,
                    result=result,
                    created_at=NOW,
                    sent_at=NOW,
                )
            )
    page = client.get(f"/exclusions/{key}").text
    proposals = page[page.index("<h2>Proposals</h2>") : page.index("<h2>Actions</h2>")]
    assert "remind-webhook: unconfirmed" in proposals
    assert "remind-webhook: sent" not in proposals
    assert "it may not have arrived" in proposals
    assert "remind-email: sent</li>" in proposals
    (shown,) = client.get(f"/api/v1/exclusions/{key}").json()["proposals"]
    assert [(d["action"], d["state"]) for d in shown["deliveries"]] == [
        ("remind-webhook", "unconfirmed"),
        ("remind-email", "sent"),
    ]


def _signed_in(client: TestClient) -> str:
    """Sign the test client in with the write token; the form's CSRF token."""
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/login").text)
    assert found
    csrf = found.group(1)
    answer = client.post("/login", data={"token": TOKEN, "csrf": csrf}, follow_redirects=False)
    assert answer.status_code == 303
    return csrf


def test_the_propose_now_button_runs_the_proposer_as_the_api_does(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    csrf = _signed_in(client)
    page = client.get(f"/exclusions/{key}").text
    form = re.search(
        r'<form method="post" action="([^"]+)">[^<]*<input[^>]*>[^<]*'
        r'<button type="submit" id="propose-now">',
        page,
    )
    assert form is not None
    answer = client.post(form.group(1), data={"csrf": csrf}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/exclusions/{key}?done=propose"
    assert "Done: propose." in client.get(answer.headers["location"]).text
    deadline = time.monotonic() + 30
    while not any(line.startswith(f"propose {key}:") for line in state.log):
        assert time.monotonic() < deadline, state.log
        time.sleep(0.05)
    # As through the API: the proposer ran (the seeded repository has no remote, so it
    # recorded a failure to retry) and sent nothing.
    assert [line for line in state.log if line.startswith(f"propose {key}:")] == [
        f"propose {key}: failed"
    ]
    with state.store.session() as session:
        assert session.exec(select(Outbox)).all() == []


def test_propose_now_is_offered_for_a_verified_exclusion_whose_review_is_overdue(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    with state.store.session(write=True) as session:
        exclusion = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.key) == key)
        ).one()
        note = session.exec(
            select(StoredAnnotation).where(
                col(StoredAnnotation.exclusion_id) == exclusion.id, col(StoredAnnotation.current)
            )
        ).first()
        assert note is not None
        note.review_by = NOW.date() - timedelta(days=1)
        session.add(note)
    page = client.get(f"/exclusions/{key}").text
    assert client.get(f"/api/v1/exclusions/{key}").json()["exclusion"]["state"] == "overdue"
    assert 'id="propose-now"' in page
    csrf = _signed_in(client)
    answer = client.post(f"/exclusions/{key}/propose", data={"csrf": csrf}, follow_redirects=False)
    assert answer.status_code == 303, answer.text


def test_the_front_page_lists_the_deliveries_that_failed_or_gave_up(
    served: tuple[TestClient, str, AppState],
) -> None:
    client, key, state = served
    before = client.get("/").text
    assert 'Deliveries failing <span class="count">0</span>' in before
    assert "None: every push, pull request and message went out." in before
    _propose(state.store, key)
    page = client.get("/").text
    assert 'Deliveries failing <span class="count">2</span>' in page
    listed = page[page.index('<ul class="plain" id="deliveries">') :]
    listed = listed[: listed.index("</ul>")]
    items = listed.split("<li ")[1:]
    assert len(items) == 2  # the sent push is not listed
    assert "remind-email dead after 8 attempts" in items[0]
    assert "gave up: a person looks" in items[0]
    assert "comment failed after 3 attempts" in items[1]
    assert "GitHub answered 502 Bad Gateway" in items[1]
    assert f'href="/exclusions/{key}"' in items[1]

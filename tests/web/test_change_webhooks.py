"""The lifecycle's webhooks: a proposal's pull request (GitHub ``pull_request``) or merge
request (GitLab merge request events) merged or closed, on SQLite and PostgreSQL.

GitHub: https://docs.github.com/en/webhooks/webhook-events-and-payloads#pull_request
(signed with ``X-Hub-Signature-256``; ``repository.full_name`` names the repository); GitLab:
https://docs.gitlab.com/ee/user/project/integrations/webhook_events.html#merge-request-events
(``X-Gitlab-Token``, ``object_kind: merge_request``, ``object_attributes.action`` ``merge``
or ``close``; ``project.web_url`` and ``path_with_namespace`` name the project). An event
decides a proposal only when its repository is the one the proposal's change request is in.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import col, select
from webseed import NOW, seed

from govern.exclusions.states import EventKind, ProposalKind, ProposalState, State, Via
from govern.store.db import Store
from govern.store.models import Event, Proposal, StoredExclusion
from govern.web.app import create_app
from govern.web.security import Secrets
from govern.web.state import AppState

GITHUB_SECRET = "gh-hook-" + "x" * 24
GITLAB_TOKEN = "gl-hook-" + "y" * 24
BRANCH = "govern/relax/cupy-cuda13x-0123456789"
# The proposal's change request page, as the forge answered when it was opened.
GITHUB_PAGE = "https://github.example/vllm-project/vllm/pull/7"
GITLAB_PROJECT = "https://gitlab.example/acme/platform/app"


@pytest.fixture
def served(
    database_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[TestClient, str, Store]]:
    via = getattr(request, "param", "github")
    url = GITHUB_PAGE if via == "github" else f"{GITLAB_PROJECT}/-/merge_requests/7"
    with Store(database_url) as store:
        key = seed(store, tmp_path, generated=3)
        with store.session(write=True) as session:
            exclusion = session.exec(
                select(StoredExclusion).where(col(StoredExclusion.key) == key)
            ).one()
            exclusion.state = State.PROPOSED
            session.add(
                Proposal(
                    exclusion_id=exclusion.id or 0,
                    kind=ProposalKind.PULL_REQUEST,
                    dedupe_key=f"proposal:{key}:14.1.1",
                    state=ProposalState.OPEN,
                    created_at=NOW,
                    version="14.1.1",
                    branch=BRANCH,
                    number=7,
                    via=Via(via),
                    url=url,
                )
            )
        secrets = Secrets(github_webhook_secret=GITHUB_SECRET, gitlab_webhook_token=GITLAB_TOKEN)
        state = AppState(store=store, secrets=secrets, clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            yield client, key, store


def _outcome(store: Store, key: str) -> tuple[str, str, list[tuple[str, int | None]]]:
    with store.session() as session:
        exclusion = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.key) == key)
        ).one()
        proposal = session.exec(select(Proposal)).one()
        events = session.exec(
            select(Event)
            .where(col(Event.kind).in_((EventKind.MERGED, EventKind.DECLINED)))
            .order_by(col(Event.id))
        ).all()
    return exclusion.state, proposal.state, [(e.kind, e.pull_request) for e in events]


def _github(client: TestClient, payload: dict[str, Any], secret: str = GITHUB_SECRET) -> Any:
    body = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return client.post(
        "/webhooks/github",
        content=body,
        headers={"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": signature},
    )


def _pull(merged: bool, number: int = 7, repository: str = "vllm-project/vllm") -> dict[str, Any]:
    return {
        "action": "closed",
        "number": number,
        "pull_request": {"number": number, "merged": merged, "head": {"ref": BRANCH}},
        "repository": {"full_name": repository, "html_url": f"https://github.example/{repository}"},
    }


def test_a_merged_pull_request_records_merged_once(
    served: tuple[TestClient, str, Store],
) -> None:
    client, key, store = served
    answers = [_github(client, _pull(merged=True)).json() for _ in range(2)]
    assert [a["closed"] for a in answers] == [1, 0]  # a redelivery changes nothing
    assert _outcome(store, key) == ("proposed", "merged", [("merged", 7)])


def test_a_pull_request_closed_unmerged_is_declined_and_held(
    served: tuple[TestClient, str, Store],
) -> None:
    client, key, store = served
    assert _github(client, _pull(merged=False)).json()["closed"] == 1
    assert _outcome(store, key) == ("held", "declined", [("declined", 7)])


def test_another_pull_request_or_a_wrong_signature_changes_nothing(
    served: tuple[TestClient, str, Store],
) -> None:
    client, key, store = served
    assert _github(client, _pull(merged=True, number=8)).json()["closed"] == 0
    assert _github(client, _pull(merged=True), secret="wrong").status_code == 401
    assert _outcome(store, key) == ("proposed", "open", [])


def test_a_pull_request_of_another_repository_changes_nothing(
    served: tuple[TestClient, str, Store],
) -> None:
    """Branch and number match, the signature is right: the repository is not the
    proposal's, so the event is ignored (the branch name is shown on the dashboard)."""
    client, key, store = served
    for other in ("mallory/vllm", "vllm-project/vllm-fork", "mallory/vllm-project/vllm"):
        answer = _github(client, _pull(merged=True, repository=other))
        assert answer.status_code == 200
        assert answer.json()["closed"] == 0
    for malformed in ({}, {"full_name": 7}, {"full_name": ""}):
        payload = {**_pull(merged=True), "repository": malformed}
        assert _github(client, payload).json()["closed"] == 0
    assert _outcome(store, key) == ("proposed", "open", [])
    # The proposal's own repository, named in another case (GitHub's names ignore it).
    assert _github(client, _pull(merged=True, repository="vLLM-Project/vllm")).json()["closed"] == 1
    assert _outcome(store, key) == ("proposed", "merged", [("merged", 7)])


def _gitlab(
    client: TestClient,
    action: str,
    token: str = GITLAB_TOKEN,
    iid: int = 7,
    project: tuple[int, str] = (41, "acme/platform/app"),
) -> Any:
    payload = {
        "object_kind": "merge_request",
        "event_type": "merge_request",
        "project": {
            "id": project[0],
            "path_with_namespace": project[1],
            "web_url": f"https://gitlab.example/{project[1]}",
        },
        "object_attributes": {
            "iid": iid,
            "action": action,
            "state": {"merge": "merged", "close": "closed"}.get(action, "opened"),
            "source_branch": BRANCH,
            "target_branch": "main",
        },
    }
    return client.post(
        "/webhooks/gitlab",
        json=payload,
        headers={"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": token},
    )


@pytest.mark.parametrize("served", ["gitlab"], indirect=True)
def test_a_merged_merge_request_records_merged(served: tuple[TestClient, str, Store]) -> None:
    client, key, store = served
    assert _gitlab(client, "update").json()["closed"] == 0  # not an ending
    assert _gitlab(client, "merge").json() == {"ok": True, "event": "merge_request", "closed": 1}
    assert _outcome(store, key) == ("proposed", "merged", [("merged", 7)])


@pytest.mark.parametrize("served", ["gitlab"], indirect=True)
def test_a_closed_merge_request_is_declined(served: tuple[TestClient, str, Store]) -> None:
    client, key, store = served
    assert _gitlab(client, "close").json()["closed"] == 1
    assert _outcome(store, key) == ("held", "declined", [("declined", 7)])


@pytest.mark.parametrize("served", ["gitlab"], indirect=True)
def test_a_gitlab_webhook_needs_its_token(served: tuple[TestClient, str, Store]) -> None:
    client, key, store = served
    assert _gitlab(client, "merge", token="wrong").status_code == 401
    assert client.post("/webhooks/gitlab", json={}).status_code == 401
    assert _gitlab(client, "merge", iid=8).json()["closed"] == 0
    assert _outcome(store, key) == ("proposed", "open", [])


@pytest.mark.parametrize("served", ["gitlab"], indirect=True)
def test_a_merge_request_of_another_project_changes_nothing(
    served: tuple[TestClient, str, Store],
) -> None:
    """Branch and iid match, the token is right: another project (one whose path is a
    tail of the proposal's too) is ignored; so is a GitHub event for a GitLab proposal."""
    client, key, store = served
    for project in ((99, "mallory/app"), (98, "platform/app"), (97, "acme/platform/app/x")):
        answer = _gitlab(client, "merge", project=project)
        assert answer.status_code == 200
        assert answer.json()["closed"] == 0
    assert _github(client, _pull(merged=True, repository="acme/app")).json()["closed"] == 0
    assert _outcome(store, key) == ("proposed", "open", [])
    assert _gitlab(client, "merge").json()["closed"] == 1
    assert _outcome(store, key) == ("proposed", "merged", [("merged", 7)])

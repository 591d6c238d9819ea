"""Webhooks: a verification updated by the CI's own event, without polling.

Request shapes follow the vendors' documentation:

- GitHub signs each delivery with ``X-Hub-Signature-256: sha256=<HMAC-SHA256 of the raw
  body with the webhook secret>`` and names the event in ``X-GitHub-Event``
  (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries);
  a ``workflow_run`` event with ``action: completed`` carries ``workflow_run.id``,
  ``status`` and ``conclusion``
  (https://docs.github.com/en/webhooks/webhook-events-and-payloads#workflow_run).
- Buildkite sends the webhook's token as is in ``X-Buildkite-Token`` and the event in
  ``X-Buildkite-Event``; ``build.finished`` carries ``build.number`` and ``build.state``
  (https://buildkite.com/docs/apis/webhooks, .../webhooks/pipelines/build-events).
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

from govern.application import CIProviders
from govern.ci.base import Conclusion, Provider, RunRef, RunStatus, Started, Trial
from govern.exclusions.states import CandidateStatus, State
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease, Verification
from govern.web.app import create_app
from govern.web.security import Secrets
from govern.web.state import AppState

SECRET = "whsec-0123456789abcdef"
BK_TOKEN = "bk-webhook-token-0123456789"


class Answering(Provider):
    """A hosted provider as govern sees it: its status says the run passed."""

    def __init__(self, name: str, kind: str) -> None:
        super().__init__(name)
        self.kind = kind
        self.asked: list[str] = []

    async def start(self, trial: Trial) -> Started:
        raise AssertionError("a webhook never starts a run")

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        self.asked.append(run.run_id)
        return RunStatus(Conclusion.PASSED, "success", installed=str(trial.version))


@pytest.fixture
def running(
    database_url: str, tmp_path: Path
) -> Iterator[tuple[TestClient, Store, dict[str, Answering]]]:
    """A store whose cupy candidate 14.1.1 has a GitHub run and a Buildkite build going."""
    with Store(database_url) as store:
        seed(store, tmp_path, generated=0)
        with store.session(write=True) as session:
            cupy = session.exec(select(StoredExclusion)).one()
            fixed = session.exec(
                select(StoredRelease).where(StoredRelease.version == "14.1.1")
            ).one()
            for profile, provider, run_id in (("gh", "gha", "4242"), ("bk", "bk", "77")):
                candidate = Candidate(
                    exclusion_id=cupy.id or 0,
                    release_id=fixed.id or 0,
                    profile=profile,
                    status=CandidateStatus.VERIFYING,
                    found_at=NOW,
                )
                session.add(candidate)
                session.flush()
                session.add(
                    Verification(
                        candidate_id=candidate.id or 0,
                        provider=provider,
                        profile=profile,
                        run_id=run_id,
                        started_at=NOW,
                    )
                )
            cupy.state = State.VERIFYING
        providers = {"gha": Answering("gha", "github-actions"), "bk": Answering("bk", "buildkite")}
        state = AppState(
            store=store,
            secrets=Secrets(github_webhook_secret=SECRET, buildkite_webhook_token=BK_TOKEN),
            ci=CIProviders({**providers}, lambda _p: None),
            clock=lambda: NOW,
        )
        with TestClient(create_app(state)) as client:
            yield client, store, providers


def _conclusions(store: Store) -> dict[str, str | None]:
    with store.session() as session:
        return {
            v.provider: v.conclusion
            for v in session.exec(
                select(Verification).where(col(Verification.provider).in_(("gha", "bk")))
            )
        }


def _signed(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _deliver(client: TestClient, body: bytes, event: str = "workflow_run") -> Any:
    """A correctly signed GitHub delivery of ``body``."""
    return client.post(
        "/webhooks/github",
        content=body,
        headers={
            "X-GitHub-Event": event,
            "X-Hub-Signature-256": _signed(body),
            "Content-Type": "application/json",
        },
    )


WORKFLOW_RUN = {
    "action": "completed",
    "workflow_run": {
        "id": 4242,
        "name": "govern verify govern-9-1",
        "status": "completed",
        "conclusion": "success",
        "html_url": "https://github.com/example/app/actions/runs/4242",
    },
}


def test_a_github_webhook_with_a_wrong_signature_is_refused(
    running: tuple[TestClient, Store, dict[str, Answering]], caplog: pytest.LogCaptureFixture
) -> None:
    client, store, providers = running
    body = json.dumps(WORKFLOW_RUN).encode()
    headers = {"X-GitHub-Event": "workflow_run", "Content-Type": "application/json"}
    unsigned = client.post("/webhooks/github", content=body, headers=headers)
    assert unsigned.status_code == 401
    wrong = client.post(
        "/webhooks/github",
        content=body,
        headers={**headers, "X-Hub-Signature-256": _signed(body, "not-the-secret")},
    )
    assert wrong.status_code == 401
    tampered = client.post(
        "/webhooks/github",
        content=body.replace(b"success", b"failure"),
        headers={**headers, "X-Hub-Signature-256": _signed(body)},
    )
    assert tampered.status_code == 401
    assert providers["gha"].asked == []
    assert _conclusions(store)["gha"] is None
    assert "GitHub webhook refused (unsigned)" in caplog.text
    assert "GitHub webhook refused (wrongly signed)" in caplog.text
    assert SECRET not in caplog.text


def test_a_signed_workflow_run_event_concludes_the_verification(
    running: tuple[TestClient, Store, dict[str, Answering]],
) -> None:
    client, store, providers = running
    answer = _deliver(client, json.dumps(WORKFLOW_RUN).encode())
    assert answer.status_code == 200, answer.text
    assert answer.json()["updated"] == 1
    assert providers["gha"].asked == ["4242"]  # one targeted read of the evidence
    assert _conclusions(store) == {"gha": "passed", "bk": None}
    ping = json.dumps({"zen": "Keep it logically awesome."}).encode()
    pong = client.post(
        "/webhooks/github",
        content=ping,
        headers={"X-GitHub-Event": "ping", "X-Hub-Signature-256": _signed(ping)},
    )
    assert pong.status_code == 200


def test_a_buildkite_webhook_needs_its_token(
    running: tuple[TestClient, Store, dict[str, Answering]],
) -> None:
    client, store, providers = running
    body = json.dumps(
        {
            "event": "build.finished",
            "build": {"number": 77, "state": "passed"},
            "pipeline": {"slug": "verify"},
        }
    ).encode()
    headers = {"X-Buildkite-Event": "build.finished", "Content-Type": "application/json"}
    assert client.post("/webhooks/buildkite", content=body, headers=headers).status_code == 401
    wrong = {**headers, "X-Buildkite-Token": "guess"}
    assert client.post("/webhooks/buildkite", content=body, headers=wrong).status_code == 401
    assert providers["bk"].asked == []
    right = {**headers, "X-Buildkite-Token": BK_TOKEN}
    answer = client.post("/webhooks/buildkite", content=body, headers=right)
    assert answer.status_code == 200
    assert answer.json()["updated"] == 1
    assert _conclusions(store) == {"gha": None, "bk": "passed"}


def test_webhooks_without_a_configured_secret_refuse_everything(
    database_url: str, tmp_path: Path
) -> None:
    with Store(database_url) as store:
        seed(store, tmp_path, generated=0)
        state = AppState(store=store, secrets=Secrets(), clock=lambda: NOW)
        with TestClient(create_app(state)) as client:
            body = b"{}"
            signed = {"X-Hub-Signature-256": _signed(body, ""), "X-GitHub-Event": "ping"}
            assert client.post("/webhooks/github", content=body, headers=signed).status_code == 401
            token = {"X-Buildkite-Token": ""}
            assert (
                client.post("/webhooks/buildkite", content=body, headers=token).status_code == 401
            )


def test_deeply_nested_json_in_a_signed_webhook_is_a_400(
    running: tuple[TestClient, Store, dict[str, Answering]],
) -> None:
    client, store, _ = running
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000):
        answer = _deliver(client, body)  # under the 1 MiB limit, deep enough to recurse
        assert answer.status_code == 400, answer.text
        assert answer.json() == {"error": "the body is not a JSON object"}
    assert _deliver(client, b"[1, 2]").status_code == 400
    assert _conclusions(store) == {"gha": None, "bk": None}

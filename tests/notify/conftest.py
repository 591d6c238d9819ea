"""The reminders' fixtures: a tracked clone whose cupy cap is verified, and the receivers
(GitHub, a Slack-compatible webhook, an SMTP server with STARTTLS and AUTH), each started
for one test and stopped after it. The story and its constants: tests/reminderworld.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gitrepo import Repo
from reminderworld import KV, NOW, SMTP_PASSWORD, SMTP_USER, TOKEN, verify

from fakes.forge_github import FakeGitHubForge
from fakes.smtp import SMTPServer
from fakes.webhook import FakeWebhook
from govern.config import Config
from govern.service.track import TrackOptions, track
from govern.store.db import Store
from govern.store.models import StoredRelease


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The user's clone (of a bare origin) with requirements/kv_connectors.txt."""
    seed = Repo(tmp_path / "seed")
    seed.write("requirements/kv_connectors.txt", KV)
    seed.git("add", "-A")
    seed.git("commit", "-q", "-m", "kv connectors")
    bare = tmp_path / "origin.git"
    seed.git("clone", "-q", "--bare", str(seed.root), str(bare))
    clone = tmp_path / "vllm"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    return clone


@pytest.fixture
def tracked(database_url: str, clone: Path) -> Iterator[Store]:
    """The clone tracked as vllm-project/vllm; 14.0.1 and 14.1.0 published, nothing verified."""
    with Store(database_url) as opened:
        track(
            opened,
            clone,
            None,
            config=Config(repository="vllm-project/vllm"),
            options=TrackOptions(now=NOW),
        )
        with opened.session(write=True) as session:
            session.add_all(
                StoredRelease(package="cupy-cuda13x", version=v, first_seen_at=NOW)
                for v in ("14.0.1", "14.1.0")
            )
        yield opened


@pytest.fixture
def store(tracked: Store) -> Store:
    """The clone tracked, and 14.1.1 verified on cuda13."""
    verify(tracked, "14.1.1")
    return tracked


@pytest.fixture
def github() -> Iterator[FakeGitHubForge]:
    """GitHub with vllm-project/vllm, whose issue #1 is the one the exclusion links."""
    with FakeGitHubForge(token=TOKEN, owner="vllm-project", repo="vllm") as server:
        opened = httpx.post(
            f"{server.url}/repos/{server.repository}/issues",
            json={"title": "CuPy 14.1.0 breaks the runtime image", "body": "cupy/cupy#9963"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert opened.json()["number"] == 1
        yield server


@pytest.fixture
def webhook() -> Iterator[FakeWebhook]:
    """A Slack-compatible incoming webhook."""
    with FakeWebhook() as server:
        yield server


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SMTPServer]:
    """A mail submission server with STARTTLS and AUTH."""
    with SMTPServer(tmp_path / "tls", user=SMTP_USER, password=SMTP_PASSWORD) as server:
        yield server

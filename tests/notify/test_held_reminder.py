"""A proposal held because a lock cannot be regenerated still reminds the people of the
line, once, saying what blocks (issue 25): a real git remote, a real Slack-shaped webhook."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx
from gitrepo import Repo
from reminderworld import NOW, verify

from fakes.webhook import FakeWebhook
from govern.config import Config, NotifyConfig, ProposeConfig
from govern.exclusions.states import RunState, Via
from govern.git.push import Pusher
from govern.notify import channels
from govern.notify.base import Notifier
from govern.service.outcome import ProposeResult
from govern.service.propose import Proposer
from govern.service.track import TrackOptions, track
from govern.store.db import Store

HOOK_ENV = "GOVERN_TEST_HOOK"
PYPROJECT = """\
[project]
name = "app"
version = "0.1"
dependencies = [
    # 14.1.0 imports a module nobody ships (cupy/cupy#9963)
    "cupy-demo<14.1.0",
]
"""
# A PEP 751 lock another tool wrote: govern regenerates only pip's.
OTHER_PYLOCK = (
    'lock-version = "1.0"\ncreated-by = "uv"\n\n'
    '[[packages]]\nname = "cupy-demo"\nversion = "14.0.1"\n'
)


def _run(store: Store, clone: Path, webhook: FakeWebhook, config: Config) -> ProposeResult:
    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5) as client:

            def notifiers_for(_root: Path, settings: Config) -> list[Notifier]:
                environ = {HOOK_ENV: webhook.hook_url}
                return channels.build(
                    settings.notify, http=client, environ=environ, forge=None, host=""
                )

            proposer = Proposer(
                store,
                pusher_for=lambda root, s: Pusher(root, remote=s.remote),
                config_for=lambda _root: config,
                now=lambda: NOW,
                notifiers_for=notifiers_for,
            )
            return await proposer.run()

    return asyncio.run(main())


def test_a_held_proposal_reminds_once_and_says_what_blocks(
    tmp_path: Path, database_url: str, webhook: FakeWebhook
) -> None:
    seed = Repo(tmp_path / "seed")
    seed.commit(
        "app",
        "2026-05-01T00:00:00+00:00",
        {"pyproject.toml": PYPROJECT, "pylock.toml": OTHER_PYLOCK},
    )
    bare = tmp_path / "origin.git"
    seed.git("clone", "-q", "--bare", str(seed.root), str(bare))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    config = Config(
        repository="acme/app",
        propose=ProposeConfig(via=Via.GIT),
        notify=NotifyConfig(channels=("webhook",), webhook_url_env=HOOK_ENV),
    )
    with Store(database_url) as store:
        track(store, clone, None, config=config, options=TrackOptions(now=NOW))
        verify(store, "14.1.1", package="cupy-demo")
        results = [_run(store, clone, webhook, config) for _ in range(2)]
    for result in results:
        (outcome,) = result.proposals
        assert outcome.state == RunState.HELD
        assert outcome.message is not None
        assert "pylock.toml" in outcome.message
        assert "reminder" in outcome.message
    assert len(webhook.messages) == 1  # once, however many runs
    said: Any = webhook.messages[0]
    text = str(said)
    blocked = "Blocked: govern did not propose the change itself: `pylock.toml was written by uv"
    assert blocked in text

"""A marker in outside text is never govern's: one exclusion's reason cannot stop another's
reminder.

Two exclusions link this repository's issue #1; the first one's reason carries the second
one's reminder marker as govern used to write it. The first reminder is posted (quoting
that reason); the run dies while sending the second (its outbox row left ``sending``,
nothing posted). The next run looks for the second comment by its marker and must not take
the first one for it: the second reminder is posted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from gitrepo import Repo
from reminderworld import ISSUE, NOW, TOKEN, verify
from sqlmodel import col, select

from fakes.forge_github import FakeGitHubForge
from govern.config import Config, NotifyConfig, ProposeConfig
from govern.exclusions.states import OutboxState, ProposeMode, Via
from govern.forge.github import GitHubForge
from govern.notify import channels
from govern.notify.base import Message, Notifier
from govern.service.propose import Proposer, ProposeResult
from govern.store.db import Store
from govern.store.models import Outbox, StoredAnnotation, StoredExclusion, StoredRelease

TWO = f"""\
# CuPy 14.1.0 imports pytest at import time; tracked in {ISSUE}
cupy-cuda13x < 14.1.0
# The same for the CUDA 12 wheels; tracked in {ISSUE}
cupy-cuda12x < 14.1.0
"""


class Dies(BaseException):
    """The process dying after the outbox marked a comment sending, before it was posted."""


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The user's clone (of a bare origin) with two exclusions linking issue #1."""
    seed = Repo(tmp_path / "seed")
    seed.write("requirements/cuda.txt", TWO)
    seed.git("add", "-A")
    seed.git("commit", "-q", "-m", "cuda wheels")
    bare = tmp_path / "origin.git"
    seed.git("clone", "-q", "--bare", str(seed.root), str(bare))
    clone = tmp_path / "vllm"
    seed.git("clone", "-q", str(bare), str(clone))
    return clone


def remind(store: Store, github: FakeGitHubForge, *, dies_on: str | None = None) -> ProposeResult:
    """One ``govern propose`` run reminding on the issue only (``dies_on``: the run dies
    while sending the comment whose key starts with it, before the comment is posted)."""
    config = Config(
        propose=ProposeConfig(via=Via.GITHUB, mode=ProposeMode.REMIND),
        notify=NotifyConfig(channels=("issue",)),
    )

    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(github.repository, client, api_url=github.url, token=TOKEN)

            def notifiers_for(_root: Path, settings: Config) -> list[Notifier]:
                built = channels.build(
                    settings.notify, http=client, environ={}, forge=forge, host="github.com"
                )
                for notifier in built:
                    real = notifier.send

                    async def die_first(message: Message, real: Any = real) -> Any:
                        if dies_on is not None and message.key.startswith(dies_on):
                            raise Dies
                        return await real(message)

                    notifier.send = die_first  # type: ignore[method-assign]
                return built

            proposer = Proposer(
                store,
                pusher_for=lambda _root, _settings: None,  # type: ignore[arg-type,return-value]
                forge_for=lambda _root, _settings: forge,
                config_for=lambda _root: config,
                now=lambda: NOW,
                notifiers_for=notifiers_for,
            )
            return await proposer.run()

    return asyncio.run(main())


def test_a_reason_carrying_another_reminder_s_marker_does_not_stop_that_reminder(
    tracked: Store, github: FakeGitHubForge
) -> None:
    with tracked.session(write=True) as session:
        session.add_all(
            StoredRelease(package="cupy-cuda12x", version=v, first_seen_at=NOW)
            for v in ("14.0.1", "14.1.0")
        )
        first, second = session.exec(
            select(StoredExclusion).order_by(col(StoredExclusion.id))
        ).all()
        assert (first.package, second.package) == ("cupy-cuda13x", "cupy-cuda12x")
        note = session.exec(
            select(StoredAnnotation).where(
                col(StoredAnnotation.exclusion_id) == first.id, col(StoredAnnotation.current)
            )
        ).one()
        forged = f"<!-- govern:reminder=remind:{second.key}:14.1.1:issue -->"
        note.reason = f"{note.reason} {forged}"
        later = f"remind:{second.key}:"
    verify(tracked, "14.1.1", "cupy-cuda13x")
    verify(tracked, "14.1.1", "cupy-cuda12x")
    with pytest.raises(Dies):
        remind(tracked, github, dies_on=later)
    with tracked.session() as session:
        row = session.exec(select(Outbox).where(col(Outbox.dedupe_key).startswith(later))).one()
        assert (row.state, row.attempts) == (OutboxState.SENDING, 1)
    assert len(github.comments[1]) == 1, "the first reminder, quoting the reason"
    result = remind(tracked, github)
    comments = github.comments[1]
    assert len(comments) == 2, "the second reminder is posted, not found in the first"
    assert "`cupy-cuda12x < 14.1.0`" in comments[1]["body"]
    assert "issue vllm-project/vllm#1: sent" in (result.proposals[1].message or "")

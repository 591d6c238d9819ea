"""The CuPy story's shared pieces (tests/notify, tests/service): a CI run that passes, the
secrets, the store's story.

The store of tests/notify/conftest.py holds the CuPy story of
tests/service/test_propose.py (``cupy-cuda13x < 14.1.0``, 14.1.1 verified on cuda13 by a
CI run that reports the installed version), with the reason linking this repository's own
issue #1 and upstream's cupy/cupy#9963. The receivers are local: GitHub
(tests/fakes/forge_github.py), a Slack-compatible webhook (tests/fakes/webhook.py) and an
SMTP server with STARTTLS and AUTH (tests/fakes/smtp.py).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlmodel import select

from govern.ci.base import Conclusion, Provider, RunRef, RunStatus, Started, Trial
from govern.exclusions.states import State
from govern.locks.installed import PinsFor
from govern.service.verify import Verifier
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease

NOW = datetime(2026, 6, 2, 9, 0, tzinfo=UTC)
TOKEN = "ghp_" + "n" * 36
SMTP_USER = "govern-bot"
SMTP_PASSWORD = "smtp-pa55-" + "q" * 12
ISSUE = "https://github.com/vllm-project/vllm/issues/1"
KV = f"""\
# Dependencies for KV connectors
lmcache >= 0.3.9
# CuPy 14.1.0 imports pytest at import time (cupy/cupy#9963);
# keep it out until a fixed newer release is verified. Tracked in {ISSUE}
cupy-cuda13x < 14.1.0
"""


class Passes(Provider):
    """A CI run that passes and reports the version it installed."""

    kind = "scripted"

    def __init__(self) -> None:
        super().__init__("cuda13-ci", timeout=3600.0)
        self.trials: list[Trial] = []

    async def start(self, trial: Trial) -> Started:
        self.trials.append(trial)
        ref = RunRef(f"run-{trial.version}", f"https://ci.example/runs/{trial.version}")
        return Started(ref, RunStatus(Conclusion.PASSED, "exit 0", installed=str(trial.version)))

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        return RunStatus(None)

    async def cancel(self, run: RunRef) -> None:
        return None


def verify(
    store: Store, version: str, package: str = "cupy-cuda13x", pins_for: PinsFor | None = None
) -> Passes:
    """Publish ``version`` as ``package``'s candidate and verify it (it passes); the
    provider, with the trials it was given."""
    with store.session(write=True) as session:
        exclusion = session.exec(
            select(StoredExclusion).where(StoredExclusion.package == package)
        ).one()
        release = StoredRelease(package=package, version=version, first_seen_at=NOW)
        session.add(release)
        session.flush()
        session.add(
            Candidate(
                exclusion_id=exclusion.id or 0,
                release_id=release.id or 0,
                profile="cuda13",
                found_at=NOW,
            )
        )
        exclusion.state = State.CANDIDATE
    provider = Passes()
    verifier = Verifier(
        store,
        provider_for=lambda _profile: provider,
        providers={provider.name: provider},
        clock=lambda: NOW,
        pins_for=pins_for,
    )
    asyncio.run(verifier.run())
    return provider

"""The CuPy story on real git: a verified candidate becomes one branch with one change, once.

A local bare repository is ``origin``; the user's clone is tracked; 14.1.1 is verified
(a scripted CI provider that reports the installed version, as the real ones do); then
``govern propose`` runs three times and pushes one branch whose only change is the line
``cupy-cuda13x < 14.1.0`` becoming ``cupy-cuda13x != 14.1.0`` plus the evidence comment.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from gitrepo import Repo
from reminderworld import Passes, verify
from sqlmodel import col, select

from fakes.forge_github import FakeGitHubForge, message
from govern.config import Config, ProposeConfig
from govern.exclusions.states import CandidateStatus, EventKind, ProposeMode, State, Via
from govern.forge.base import ChangeRequest, Opening
from govern.forge.github import GitHubForge
from govern.git.push import Pusher
from govern.service.propose import Proposer, ProposeResult
from govern.service.track import TrackOptions, track
from govern.service.verify import Verifier
from govern.store.db import Store
from govern.store.history import threads
from govern.store.models import (
    Candidate,
    Event,
    Outbox,
    Proposal,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
)

NOW = datetime(2026, 6, 2, tzinfo=UTC)
KV = """\
# Dependencies for KV connectors
lmcache >= 0.3.9
nixl >= 0.7.1 # Required for disaggregated prefill
# CuPy 14.1.0 imports pytest at import time (cupy/cupy#9963);
# keep it out until a fixed newer release is verified for runtime images.
cupy-cuda13x < 14.1.0
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def origin(tmp_path: Path) -> tuple[Path, Path]:
    """(the bare origin, the user's clone) with requirements/kv_connectors.txt on main."""
    seed = Repo(tmp_path / "seed")
    (seed.root / "requirements").mkdir()
    (seed.root / "requirements" / "kv_connectors.txt").write_text(KV, encoding="utf-8")
    seed.git("add", "-A")
    seed.git("commit", "-q", "-m", "kv connectors")
    bare = tmp_path / "origin.git"
    seed.git("clone", "-q", "--bare", str(seed.root), str(bare))
    clone = tmp_path / "vllm"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    return bare, clone


@pytest.fixture
def store(database_url: str, origin: tuple[Path, Path]) -> Iterator[Store]:
    """The clone tracked, 14.0.1, 14.1.0 and 14.1.1 published, 14.1.1 verified on cuda13."""
    _bare, clone = origin
    with Store(database_url) as opened:
        track(
            opened,
            clone,
            None,
            config=Config(repository="vllm-project/vllm"),
            options=TrackOptions(now=NOW),
        )
        with opened.session(write=True) as session:
            exclusion = session.exec(select(StoredExclusion)).one()
            releases = [
                StoredRelease(package="cupy-cuda13x", version=v, first_seen_at=NOW)
                for v in ("14.0.1", "14.1.0", "14.1.1")
            ]
            session.add_all(releases)
            session.flush()
            session.add(
                Candidate(
                    exclusion_id=exclusion.id or 0,
                    release_id=releases[2].id or 0,
                    profile="cuda13",
                    found_at=NOW,
                )
            )
            session.add(  # as the poll records it
                Event(
                    exclusion_id=exclusion.id or 0,
                    kind=EventKind.CANDIDATE_FOUND,
                    at=NOW,
                    recorded_at=NOW,
                    detail={"version": "14.1.1", "profile": "cuda13"},
                )
            )
            exclusion.state = State.CANDIDATE
        provider = Passes()
        verifier = Verifier(
            opened,
            provider_for=lambda _profile: provider,
            providers={provider.name: provider},
            clock=lambda: NOW,
        )
        asyncio.run(verifier.run())
        yield opened


def _proposer(store: Store, settings: ProposeConfig) -> Proposer:
    return Proposer(
        store,
        pusher_for=lambda root, s: Pusher(root, remote=s.remote),
        config_for=lambda _root: Config(propose=settings),
        now=lambda: NOW,
    )


def test_three_runs_push_one_branch_with_only_that_line_changed(
    store: Store, origin: tuple[Path, Path]
) -> None:
    bare, clone = origin
    before = _git("status", "--porcelain", cwd=clone), _git("for-each-ref", cwd=clone)
    with store.session() as session:
        assert session.exec(select(StoredExclusion)).one().state == State.VERIFIED
    proposer = _proposer(store, ProposeConfig(via=Via.GIT))
    results = [asyncio.run(proposer.run()) for _ in range(3)]
    outcome = results[0].proposals[0]
    assert outcome.state == "sent", outcome
    assert outcome.branch is not None
    assert outcome.new == "cupy-cuda13x != 14.1.0"
    branches = _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=bare).split()
    assert sorted(branches) == sorted(["refs/heads/main", f"refs/heads/{outcome.branch}"])
    log = _git("rev-list", f"main..{outcome.branch}", cwd=bare).split()
    assert len(log) == 1, "one commit, however many runs"
    diff = _git("diff", f"main..{outcome.branch}", cwd=bare)
    changed = [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    assert "-cupy-cuda13x < 14.1.0" in changed
    assert "+cupy-cuda13x != 14.1.0" in changed
    evidence = [line for line in changed if line.startswith("+#")]
    assert evidence == [
        "+# govern: verified='14.1.1 on cuda13: https://ci.example/runs/14.1.1, installed 14.1.1'"
    ]
    assert len(changed) == 3, changed  # the line, and one comment added: nothing else
    message = _git("log", "-1", "--format=%B", outcome.branch, cwd=bare)
    assert "Govern-Proposal:" in message
    assert "installed 14.1.1" in message
    # The user's clone is never touched.
    assert (_git("status", "--porcelain", cwd=clone), _git("for-each-ref", cwd=clone)) == before
    with store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        opened = session.exec(
            select(Event).where(col(Event.kind) == EventKind.PROPOSAL_OPENED)
        ).all()
        sent = session.exec(select(Outbox)).all()
    assert exclusion.state == State.PROPOSED
    assert len(opened) == 1
    assert [(o.action, o.state, o.attempts) for o in sent] == [("push", "sent", 1)]
    assert outcome.message is None
    assert [(r.proposals[0].state, r.proposals[0].message) for r in results[1:]] == [
        ("sent", "already proposed: nothing sent again")
    ] * 2


def test_dry_run_prints_the_change_and_sends_nothing(
    store: Store, origin: tuple[Path, Path]
) -> None:
    bare, _clone = origin
    result = asyncio.run(_proposer(store, ProposeConfig(via=Via.GIT)).run(dry_run=True))
    outcome = result.proposals[0]
    assert outcome.state == "dry-run"
    assert outcome.diff is not None
    assert "+cupy-cuda13x != 14.1.0" in outcome.diff
    assert outcome.body is not None
    assert "installed" in outcome.body
    assert "<!-- govern:" not in outcome.body  # the markers are signed when it is sent
    assert _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=bare).split() == [
        "refs/heads/main"
    ]
    with store.session() as session:
        assert session.exec(select(Outbox)).all() == []
        assert session.exec(select(StoredExclusion)).one().state == State.VERIFIED
    document = json.loads(json.dumps(result.as_dict()))
    assert document["schema"] == "govern.propose/1"
    assert document["proposals"][0]["old"] == "cupy-cuda13x < 14.1.0"


def test_a_line_changed_by_hand_supersedes_the_proposal(
    store: Store, origin: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, _clone = origin
    work = tmp_path / "person"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    path = work / "requirements" / "kv_connectors.txt"
    path.write_text(KV.replace("< 14.1.0", "< 14.0.9"), encoding="utf-8")
    env_args = ["-c", "user.name=Person", "-c", "user.email=p@example.org"]
    subprocess.run(["git", *env_args, "commit", "-qam", "by hand"], cwd=work, check=True)
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, check=True)
    result = asyncio.run(_proposer(store, ProposeConfig(via=Via.GIT)).run())
    assert result.proposals[0].state == "superseded"
    assert _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=bare).split() == [
        "refs/heads/main"
    ]


def test_propose_none_sends_nothing(store: Store, origin: tuple[Path, Path]) -> None:
    bare, _clone = origin
    settings = ProposeConfig(via=Via.GIT, packages=(("cupy-cuda13x", ProposeMode.NONE),))
    result = asyncio.run(_proposer(store, settings).run())
    assert result.proposals[0].state == "none"
    assert _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=bare).split() == [
        "refs/heads/main"
    ]


# -- GitHub: the pull request, once ---------------------------------------------------------
# Against tests/fakes/forge_github.py, which follows GitHub's REST documentation:
# https://docs.github.com/en/rest/pulls/pulls#create-a-pull-request and
# https://docs.github.com/en/rest/pulls/pulls#list-pull-requests (head=owner:branch).

TOKEN = "ghp_" + "t" * 36


class Dies(BaseException):
    """The process dying between the forge's answer and the outbox's record."""


def _run_github(
    store: Store,
    fake: FakeGitHubForge,
    *,
    die_after_open: bool = False,
    at: datetime = NOW,
    forge_for: Any = None,
) -> ProposeResult:
    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(fake.repository, client, api_url=fake.url, token=TOKEN)
            if die_after_open:
                real = forge.open_change

                async def open_then_die(opening: Opening) -> ChangeRequest:
                    await real(opening)
                    raise Dies

                forge.open_change = open_then_die  # type: ignore[method-assign]
            proposer = Proposer(
                store,
                pusher_for=lambda root, s: Pusher(root, remote=s.remote),
                forge_for=forge_for or (lambda _root, _s: forge),
                config_for=lambda _root: Config(propose=ProposeConfig(via=Via.GITHUB)),
                now=lambda: at,
            )
            return await proposer.run()

    return asyncio.run(main())


@pytest.fixture
def fake() -> Iterator[FakeGitHubForge]:
    with FakeGitHubForge(token=TOKEN, page_size=2) as server:
        yield server


def test_the_pull_request_is_opened_once_across_runs_and_a_crash(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    with pytest.raises(Dies):
        _run_github(store, fake, die_after_open=True)
    assert len(fake.pulls) == 1
    results = [_run_github(store, fake) for _ in range(3)]
    assert len(fake.pulls) == 1, "found by branch and marker, never opened twice"
    outcome = results[0].proposals[0]
    assert outcome.state == "sent"
    (pull,) = fake.pulls.values()
    assert outcome.number == pull["number"]
    assert pull["head"]["ref"] == outcome.branch
    body = pull["body"]
    assert "installed 14.1.1" in body
    assert "+cupy-cuda13x != 14.1.0" in body
    assert "<!-- govern:proposal=" in body
    with store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        opened = session.exec(
            select(Event).where(col(Event.kind) == EventKind.PROPOSAL_OPENED)
        ).all()
    assert exclusion.state == State.PROPOSED
    assert [e.pull_request for e in opened] == [pull["number"]]


def test_the_owner_s_users_review_and_are_assigned_and_its_teams_review(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    with store.session(write=True) as session:
        note = session.exec(select(StoredAnnotation).where(col(StoredAnnotation.current))).one()
        note.owner = "@alice @octo-org/platform Jane Doe"
    _run_github(store, fake)
    (pull,) = fake.pulls.values()
    assert [r["login"] for r in pull["requested_reviewers"]] == ["alice"]
    assert [t["slug"] for t in pull["requested_teams"]] == ["platform"]
    assert [a["login"] for a in pull["assignees"]] == ["alice"]  # a team cannot be assigned


def test_a_pull_request_closed_unmerged_holds_the_exclusion_and_is_not_reopened(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    _run_github(store, fake)
    (pull,) = fake.pulls.values()
    pull["state"] = "closed"  # a reviewer closed it without merging
    result = _run_github(store, fake)
    assert [(c["number"], c["state"]) for c in result.closed] == [(pull["number"], "declined")]
    with store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        kinds = [e.kind for e in session.exec(select(Event).order_by(col(Event.id))).all()]
    assert exclusion.state == State.HELD
    assert EventKind.DECLINED in kinds
    assert len(fake.pulls) == 1


def test_a_newer_verified_candidate_updates_the_same_pull_request(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    bare, _clone = origin
    first = _run_github(store, fake).proposals[0]
    verify(store, "14.1.2")
    results = [_run_github(store, fake) for _ in range(2)]
    second = results[0].proposals[0]
    assert second.state == "sent"
    assert (second.number, second.branch) == (first.number, first.branch)
    (pull,) = fake.pulls.values()
    assert "**Candidate:** cupy-cuda13x 14.1.2" in pull["body"]
    assert "installed 14.1.2" in pull["body"]
    assert pull["title"] == "Relax cupy-cuda13x to `cupy-cuda13x != 14.1.0` (14.1.2 verified)"
    # The branch carries the newer evidence, still one commit on the base.
    assert second.branch is not None
    assert len(_git("rev-list", f"main..{second.branch}", cwd=bare).split()) == 1
    diff = _git("diff", f"main..{second.branch}", cwd=bare)
    assert (
        "+# govern: verified='"
        "14.1.2 on cuda13: https://ci.example/runs/14.1.2, installed 14.1.2'" in diff
    )
    with store.session() as session:
        kinds = [e.kind for e in session.exec(select(Event).order_by(col(Event.id))).all()]
        states = sorted(
            (p.version, p.state) for p in session.exec(select(Proposal)).all() if p.version
        )
    assert kinds.count(EventKind.PROPOSAL_OPENED) == 1
    assert kinds.count(EventKind.PROPOSAL_UPDATED) == 1
    assert states == [("14.1.1", "superseded"), ("14.1.2", "open")]


def test_a_pull_request_whose_line_a_person_changed_is_closed_with_a_comment_once(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge, tmp_path: Path
) -> None:
    bare, _clone = origin
    opened = _run_github(store, fake).proposals[0]
    work = tmp_path / "person"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    path = work / "requirements" / "kv_connectors.txt"
    path.write_text(KV.replace("< 14.1.0", "< 14.0.9"), encoding="utf-8")
    env_args = ["-c", "user.name=Person", "-c", "user.email=p@example.org"]
    subprocess.run(["git", *env_args, "commit", "-qam", "by hand"], cwd=work, check=True)
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, check=True)
    results = [_run_github(store, fake) for _ in range(3)]
    assert [r.proposals[0].state for r in results] == ["superseded"] * 3
    assert opened.number is not None
    pull = fake.pulls[opened.number]
    assert pull["state"] == "closed"
    assert pull["merged"] is False
    said = [c["body"] for c in fake.comments.get(opened.number, [])]
    assert len(said) == 1, "closed with one comment, however many runs"
    assert "a person changed it" in said[0]
    assert "<!-- govern:superseded=" in said[0]
    with store.session() as session:
        rows = session.exec(select(Outbox).where(col(Outbox.action) == "close-change")).all()
        events = session.exec(
            select(Event).where(col(Event.kind) == EventKind.PROPOSAL_SUPERSEDED)
        ).all()
        proposal = session.exec(select(Proposal).where(col(Proposal.number) == opened.number)).one()
    assert [(r.state, r.attempts) for r in rows] == [("sent", 1)]
    assert len(events) == 1
    assert proposal.state == "superseded"


def test_the_thread_reads_found_verified_proposed_merged_relaxed_with_the_pr_number(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    bare, clone = origin
    outcome = _run_github(store, fake).proposals[0]
    assert outcome.number is not None
    assert outcome.branch is not None
    # The reviewer merges: the branch lands on main, and GitHub says merged.
    _git("update-ref", "refs/heads/main", f"refs/heads/{outcome.branch}", cwd=bare)
    fake.merge(outcome.number)
    closed = _run_github(store, fake).closed
    assert [(c["number"], c["state"]) for c in closed] == [(outcome.number, "merged")]
    # The next sync of the clone sees the new line: the exclusion is relaxed.
    subprocess.run(["git", "pull", "-q", "--ff-only"], cwd=clone, check=True)
    track(
        store,
        clone,
        None,
        config=Config(repository="vllm-project/vllm"),
        options=TrackOptions(now=NOW),
    )
    with store.session() as session:
        (thread,) = threads(session, query="cupy-cuda13x", now=NOW)
        ended = session.exec(
            select(StoredExclusion).where(col(StoredExclusion.clause) == "<14.1.0")
        ).one()
    said = [(e.kind, e.pull_request, e.detail.get("direction")) for e in thread.events]
    assert said == [
        (EventKind.ADDED, None, None),
        (EventKind.CANDIDATE_FOUND, None, None),
        (EventKind.VERIFICATION_STARTED, None, None),
        (EventKind.VERIFICATION_PASSED, None, None),
        (EventKind.PROPOSAL_OPENED, outcome.number, None),
        (EventKind.MERGED, outcome.number, None),
        (EventKind.CHANGED, None, "relaxed"),
    ], said
    assert ended.state == State.RELAXED


@pytest.mark.slow
def test_a_kill_9_between_the_pull_request_and_its_record_still_opens_one(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge, database_url: str
) -> None:
    """A real ``govern propose`` process is killed (SIGKILL) by the forge the moment the pull
    request exists, before the answer reaches it: the outbox holds ``sending``, and the next
    runs find the pull request by its branch and marker instead of opening another."""
    _bare, clone = origin
    (clone / ".govern.toml").write_text(
        f'[propose]\nvia = "github"\nforge = "{fake.url}/{fake.repository}"\n'
        f'api-url = "{fake.url}"\ntoken-env = "GOVERN_TEST_FORGE_TOKEN"\n',
        encoding="utf-8",
    )
    env = {**os.environ, "GOVERN_TEST_FORGE_TOKEN": TOKEN}
    command = [sys.executable, "-m", "govern", "propose", "--db", database_url, "--format", "json"]
    started: list[subprocess.Popen[str]] = []

    def kill_the_proposer(kind: str, _document: dict[str, Any]) -> None:
        if kind == "pull":
            os.kill(started[0].pid, signal.SIGKILL)
            started[0].wait(timeout=30)  # dead before it could read the answer

    fake.on_create = kill_the_proposer
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    started.append(process)
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGKILL
    assert len(fake.pulls) == 1
    with store.session() as session:
        row = session.exec(select(Outbox).where(col(Outbox.action) == "open-change")).one()
    assert (row.state, row.attempts) == ("sending", 1)

    fake.on_create = None
    documents = []
    for _ in range(3):
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        documents.append(json.loads(done.stdout))
    assert len(fake.pulls) == 1, "found by branch and marker, never opened twice"
    (number,) = fake.pulls
    assert [d["proposals"][0]["number"] for d in documents] == [number] * 3
    assert TOKEN not in json.dumps(documents)
    with store.session() as session:
        row = session.exec(select(Outbox).where(col(Outbox.action) == "open-change")).one()
        opened = session.exec(
            select(Event).where(col(Event.kind) == EventKind.PROPOSAL_OPENED)
        ).all()
    assert (row.state, row.attempts, row.result["number"]) == ("sent", 1, number)
    assert [e.pull_request for e in opened] == [number]


def test_an_exclusion_s_own_mode_wins_over_its_package_s(
    store: Store, origin: tuple[Path, Path]
) -> None:
    bare, _clone = origin
    with store.session() as session:
        key = session.exec(select(StoredExclusion)).one().key
    settings = ProposeConfig(
        via=Via.GIT,
        packages=(("cupy-cuda13x", ProposeMode.PULL_REQUEST),),
        exclusions=((key, ProposeMode.NONE),),
    )
    result = asyncio.run(_proposer(store, settings).run())
    assert [(p.state, p.message) for p in result.proposals] == [("none", "propose = none")]
    assert _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=bare).split() == [
        "refs/heads/main"
    ]


def test_the_commit_is_by_the_configured_author(store: Store, origin: tuple[Path, Path]) -> None:
    bare, _clone = origin
    settings = ProposeConfig(via=Via.GIT, author="Release Bot <bot@example.org>")
    proposer = Proposer(
        store,
        pusher_for=lambda root, s: Pusher(root, remote=s.remote, author=s.author_identity()),
        config_for=lambda _root: Config(propose=settings),
        now=lambda: NOW,
    )
    (outcome,) = asyncio.run(proposer.run()).proposals
    assert outcome.branch is not None
    who = _git("log", "-1", "--format=%an <%ae>|%cn <%ce>", outcome.branch, cwd=bare).strip()
    assert who.split("|")[0] == "Release Bot <bot@example.org>"


def test_after_a_decline_a_newer_verified_candidate_is_proposed_again(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    first = _run_github(store, fake).proposals[0]
    assert first.number is not None
    fake.pulls[first.number]["state"] = "closed"  # declined
    assert _run_github(store, fake).closed[0]["state"] == "declined"
    assert _run_github(store, fake).proposals == []  # held: 14.1.1 is not proposed again
    verify(store, "14.1.2")
    again = _run_github(store, fake).proposals[0]
    assert again.state == "sent"
    assert again.number is not None
    assert again.number != first.number, "a new pull request for the newer candidate"
    assert "**Candidate:** cupy-cuda13x 14.1.2" in fake.pulls[again.number]["body"]
    assert fake.pulls[first.number]["state"] == "closed"


def test_the_cli_dry_run_prints_what_the_readme_shows_and_sends_nothing(
    store: Store, origin: tuple[Path, Path], database_url: str
) -> None:
    bare, _clone = origin
    command = [sys.executable, "-m", "govern", "propose", "--dry-run", "--db", database_url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(
        "dry-run     cupy-cuda13x  requirements/kv_connectors.txt:6  govern/relax/cupy-cuda13x-"
    )
    assert lines[1:3] == [
        "--- a/requirements/kv_connectors.txt",
        "+++ b/requirements/kv_connectors.txt",
    ]
    assert "-cupy-cuda13x < 14.1.0" in lines
    assert (
        "+# govern: verified='"
        "14.1.1 on cuda13: https://ci.example/runs/14.1.1, installed 14.1.1'" in lines
    )
    assert "+cupy-cuda13x != 14.1.0" in lines
    assert "govern proposes relaxing an exclusion whose candidate passed verification." in lines
    as_json = subprocess.run(
        [*command, "--format", "json"], capture_output=True, text=True, timeout=120, check=False
    )
    (proposal,) = json.loads(as_json.stdout)["proposals"]
    assert (proposal["state"], proposal["old"], proposal["new"], proposal["via"]) == (
        "dry-run",
        "cupy-cuda13x < 14.1.0",
        "cupy-cuda13x != 14.1.0",
        "git",
    )
    assert _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=bare).split() == [
        "refs/heads/main"
    ]
    with store.session() as session:
        assert session.exec(select(Outbox)).all() == []


def test_a_failed_update_for_a_newer_candidate_is_retried_not_taken_for_the_older_one(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    first = _run_github(store, fake).proposals[0]
    assert first.number is not None
    verify(store, "14.1.2")
    fake.fail(message(502, "Bad Gateway"), method="PATCH", times=3)
    failed = _run_github(store, fake).proposals[0]
    assert failed.state == "failed"
    assert "14.1.1 verified" in fake.pulls[first.number]["title"]
    retried = _run_github(store, fake, at=NOW + timedelta(days=1)).proposals[0]
    assert (retried.state, retried.number) == ("sent", first.number)
    assert fake.pulls[first.number]["title"].endswith("(14.1.2 verified)")
    assert len(fake.pulls) == 1


def test_a_pull_request_a_person_closed_after_a_crash_is_not_opened_again(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    with pytest.raises(Dies):
        _run_github(store, fake, die_after_open=True)
    (number,) = fake.pulls
    fake.pulls[number]["state"] = "closed"  # a reviewer closed it before govern came back
    first = _run_github(store, fake)
    assert len(fake.pulls) == 1, "found closed by its markers: not opened again"
    assert first.proposals[0].number == number
    assert [(c["number"], c["state"]) for c in first.closed] == [(number, "declined")]
    with store.session() as session:
        assert session.exec(select(StoredExclusion)).one().state == State.HELD


def test_a_forge_that_cannot_be_built_stops_only_its_own_watch(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    from govern.errors import ForgeAuthError

    _run_github(store, fake)  # a pull request to watch

    def broken(_root: Path, _settings: ProposeConfig) -> GitHubForge:
        raise ForgeAuthError(
            "$GOVERN_APP_KEY is empty: the GitHub App's private key is read from it"
        )

    result = _run_github(store, fake, forge_for=broken)
    assert [p.state for p in result.proposals] == ["failed"]
    assert "GOVERN_APP_KEY" in (result.proposals[0].message or "")
    assert result.closed == []


def test_a_line_a_person_relaxed_by_hand_closes_govern_s_pull_request(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge, tmp_path: Path
) -> None:
    bare, clone = origin
    opened = _run_github(store, fake).proposals[0]
    assert opened.number is not None
    work = tmp_path / "person"
    subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    path = work / "requirements" / "kv_connectors.txt"
    path.write_text(KV.replace("< 14.1.0", "!= 14.1.0, != 14.1.1"), encoding="utf-8")
    env_args = ["-c", "user.name=Person", "-c", "user.email=p@example.org"]
    subprocess.run(["git", *env_args, "commit", "-qam", "relaxed by hand"], cwd=work, check=True)
    subprocess.run(["git", "push", "-q", "origin", "main"], cwd=work, check=True)
    subprocess.run(["git", "pull", "-q", "--ff-only"], cwd=clone, check=True)
    track(
        store,
        clone,
        None,
        config=Config(repository="vllm-project/vllm"),
        options=TrackOptions(now=NOW),
    )
    for _ in range(2):
        _run_github(store, fake)
    pull = fake.pulls[opened.number]
    assert (pull["state"], pull["merged"]) == ("closed", False)
    assert len(fake.comments.get(opened.number, [])) == 1


# -- markers: govern's alone ------------------------------------------------------------------


def _reason(store: Store, text: str) -> None:
    with store.session(write=True) as session:
        note = session.exec(select(StoredAnnotation).where(col(StoredAnnotation.current))).one()
        note.reason = text


def test_a_reason_carrying_a_candidate_marker_never_opens_a_second_pull_request(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    """The reason is in the body before govern's own markers; a forged candidate marker
    there must not make the pull request a person closed after a crash look like another
    candidate's."""
    _reason(store, "CuPy 14.1.0 is broken <!-- govern:candidate=x:1 --> (cupy/cupy#9963)")
    with pytest.raises(Dies):
        _run_github(store, fake, die_after_open=True)
    (number,) = fake.pulls
    fake.pulls[number]["state"] = "closed"  # a reviewer closed it before govern came back
    result = _run_github(store, fake)
    assert len(fake.pulls) == 1, "found by its own markers: not opened again"
    assert "<!-- govern:candidate=x:1 -->" not in fake.pulls[number]["body"]  # quoted, inert
    assert result.proposals[0].number == number
    assert [(c["number"], c["state"]) for c in result.closed] == [(number, "declined")]


def test_a_pull_request_opened_before_markers_were_signed_is_not_opened_again(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    """A body that ends with the unsigned markers govern wrote before signing them (a run
    that crashed before the upgrade) is still govern's: found, not opened twice."""
    with pytest.raises(Dies):
        _run_github(store, fake, die_after_open=True)
    (number,) = fake.pulls
    pull = fake.pulls[number]
    pull["body"] = re.sub(r" sig=[0-9a-f]+ -->", " -->", pull["body"])
    assert pull["body"].rstrip().endswith("14.1.1 -->")
    pull["state"] = "closed"
    result = _run_github(store, fake)
    assert len(fake.pulls) == 1
    assert [(c["number"], c["state"]) for c in result.closed] == [(number, "declined")]


def test_a_marker_signed_by_another_store_is_not_found(
    store: Store, origin: tuple[Path, Path], fake: FakeGitHubForge
) -> None:
    """A request whose markers were signed with another store's secret is not this
    store's: after a crash, the candidate is opened anew."""
    with pytest.raises(Dies):
        _run_github(store, fake, die_after_open=True)
    (number,) = fake.pulls
    pull = fake.pulls[number]
    pull["body"] = re.sub(r"sig=[0-9a-f]+", "sig=" + "0" * 32, pull["body"])  # another secret
    pull["state"] = "closed"
    _run_github(store, fake)
    assert len(fake.pulls) == 2


def test_a_branch_awaits_review_until_its_merge_is_seen_by_a_sync(
    store: Store,
    origin: tuple[Path, Path],
    tmp_path: Path,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from clirun import run_cli
    from fastapi.testclient import TestClient

    from govern.store.pending import relaxable
    from govern.web.app import create_app
    from govern.web.security import Secrets
    from govern.web.state import AppState

    bare, clone = origin
    result = asyncio.run(_proposer(store, ProposeConfig(via=Via.GIT)).run())
    branch = result.proposals[0].branch
    assert branch is not None
    later = NOW + timedelta(days=3)
    # The overviews list it as waiting on a person: branch, age, candidate, evidence.
    with store.session() as session:
        page = relaxable(session, now=later)
    assert page.items == []  # nothing left to relax: it is proposed
    [waiting] = page.awaiting_review
    assert (waiting.branch, waiting.candidate, waiting.age_days) == (branch, "14.1.1", 3)
    assert waiting.change.after == "cupy-cuda13x != 14.1.0"
    assert waiting.evidence is not None
    assert waiting.evidence.installed == "14.1.1"
    state = AppState(store=store, secrets=Secrets(), clock=lambda: later)
    with TestClient(create_app(state)) as client:
        home = client.get("/").text
        section = home[home.index('id="awaiting-review"') :]
        assert branch in section[: section.index("</table>")]
        assert "Nothing to relax today" not in home
        key = waiting.exclusion.id
        assert (
            f'branch <code class="branch">{branch}</code>' in client.get(f"/exclusions/{key}").text
        )
    code, out, _ = run_cli(["dashboard", "--db", database_url, "--format", "json"], capsys)
    assert code == 0
    [listed] = json.loads(out)["awaiting_review"]
    assert (listed["branch"], listed["candidate"], listed["via"]) == (branch, "14.1.1", "git")
    code, out, _ = run_cli(["dashboard", "--db", database_url], capsys)
    assert "Awaiting review: 1" in out
    assert f"branch {branch}" in out
    # A person merges it on the remote; the clone pulls; the next sync sees the line.
    reviewer = tmp_path / "reviewer"
    subprocess.run(["git", "clone", "-q", str(bare), str(reviewer)], check=True)
    _git("merge", "-q", "--ff-only", f"origin/{branch}", cwd=reviewer)
    _git("push", "-q", "origin", "main", cwd=reviewer)
    _git("pull", "-q", "--ff-only", cwd=clone)
    config = Config(repository="vllm-project/vllm")
    for day in (4, 5):  # the second sync has nothing new to record
        track(
            store, clone, None, config=config, options=TrackOptions(now=NOW + timedelta(days=day))
        )
    with store.session() as session:
        kinds = [e.kind for e in session.exec(select(Event).order_by(col(Event.id)))]
        assert kinds.count(EventKind.MERGED) == 1
        assert session.exec(select(Proposal)).one().state == "merged"
        assert relaxable(session, now=later).awaiting_review == []
        [thread] = threads(session, query="cupy-cuda13x", now=later)
    order = [e.kind for e in thread.events]
    opened = order.index(EventKind.PROPOSAL_OPENED)
    assert opened < order.index(EventKind.MERGED) < order.index(EventKind.CHANGED)


def test_the_body_lists_what_the_new_line_keeps_out_as_known_bad() -> None:
    from govern.service.propose import known_bad

    assert known_bad([], "cupy-cuda13x != 14.1.0") == ["14.1.0"]  # never "(none)" then
    assert known_bad(["14.1.0"], "cupy-cuda13x!=14.1") == ["14.1.0"]  # the same version
    assert known_bad(["13.0"], "demo>=1.0,!=1.19.0,<1.20  # why") == ["13.0", "1.19.0"]
    assert known_bad([], "not a requirement ((") == []


def test_what_a_dry_run_reads_without_the_proposer_is_what_the_proposer_would_propose(
    store: Store,
) -> None:
    """``govern propose --dry-run`` answers "nothing to propose" from
    :func:`govern.store.pending.proposable` alone, without the proposing stack: it must name
    exactly the exclusions :func:`govern.store.proposals.verified` gives the proposer, for
    every query, at every stage (verified, proposed, the candidate taken back, removed)."""
    from govern.store import proposals
    from govern.store.pending import proposable

    def both(query: str | None = None) -> tuple[list[int], list[int]]:
        with store.connection() as conn:
            light = proposable(conn, query=query)
        with store.session() as session:
            full = [work.exclusion_id for work in proposals.verified(session, query=query)]
        return light, full

    with store.session() as session:
        row = session.exec(select(StoredExclusion)).one()
        key, row_id = row.key, row.id
    for query in (None, "cupy-cuda13x", "CuPy-CUDA13x", key, "numpy", "no-such-id"):
        light, full = both(query)
        assert light == full, query
    assert both()[0] == [row_id]
    asyncio.run(_proposer(store, ProposeConfig(via=Via.GIT)).run())  # now proposed
    assert both() == ([row_id], [row_id])
    with store.session(write=True) as session:
        for candidate in session.exec(select(Candidate)).all():
            candidate.status = CandidateStatus.FOUND
            session.add(candidate)
    assert both() == ([], [])
    with store.session(write=True) as session:
        for candidate in session.exec(select(Candidate)).all():
            candidate.status = CandidateStatus.PASSED
            session.add(candidate)
        found = session.exec(select(StoredExclusion)).one()
        found.removed_at = NOW
        session.add(found)
    assert both() == ([], [])

"""govern never pushes over other people's commits, and its small promises hold.

On real git (a local bare origin) and the local fakes of GitHub and GitLab
(tests/fakes/forge_github.py, tests/fakes/forge_gitlab.py): a reviewer's fix-up on
govern's branch survives a newer candidate (a comment says so instead); a branch of the
same name that govern did not make is left as it is and another name is used; a person's
open merge request on govern's branch is not pushed into (no endless 409); labels are a
delivery of their own (applied after a crash or a failed call); a pull request is closed
with a comment when the base branch's line already admits the candidate; a run that
stands aside for another exits 0 and the daemon's job is ok.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from gitrepo import Repo
from reminderworld import verify
from sqlmodel import select

from fakes.forge_github import FakeGitHubForge, message
from fakes.forge_gitlab import FakeGitLabForge
from fakes.forge_gitlab import message as gitlab_message
from govern.config import Config, ProposeConfig
from govern.daemon.jobs import ProposeJob
from govern.exclusions.states import OutboxAction, OutboxState, Via
from govern.forge.github import GitHubForge
from govern.forge.gitlab import GitLabForge
from govern.git.push import Pusher
from govern.service.propose import Proposer, ProposeResult
from govern.service.track import TrackOptions, track
from govern.store.db import Store
from govern.store.history import proposals_of
from govern.store.models import Outbox, StoredExclusion, StoredRelease

NOW = datetime(2026, 6, 2, tzinfo=UTC)
TOKEN = "ghp_" + "p" * 36
KV = """\
lmcache >= 0.3.9
# CuPy 14.1.0 imports pytest at import time (cupy/cupy#9963)
cupy-cuda13x < 14.1.0
"""
PERSON = ["-c", "user.name=Person", "-c", "user.email=p@example.org"]


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> tuple[Path, Path]:
    """(the bare origin, the user's clone) with requirements/kv.txt on main."""
    seed = Repo(tmp_path / "seed")
    seed.write("requirements/kv.txt", KV)
    seed.git("add", "-A")
    seed.git("commit", "-q", "-m", "kv")
    bare = tmp_path / "origin.git"
    seed.git("clone", "-q", "--bare", str(seed.root), str(bare))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    return bare, clone


@pytest.fixture
def store(database_url: str, origin: tuple[Path, Path]) -> Iterator[Store]:
    """The clone tracked, 14.1.0 published, 14.1.1 verified."""
    _bare, clone = origin
    with Store(database_url) as opened:
        track(opened, clone, None, config=Config(repository="o/r"), options=TrackOptions(now=NOW))
        with opened.session(write=True) as session:
            session.add_all(
                StoredRelease(package="cupy-cuda13x", version=v, first_seen_at=NOW)
                for v in ("14.0.1", "14.1.0")
            )
        verify(opened, "14.1.1")
        yield opened


@pytest.fixture
def github() -> Iterator[FakeGitHubForge]:
    with FakeGitHubForge(token=TOKEN) as server:
        yield server


class Dies(BaseException):
    """The process dying right after the forge answered a create."""


class DiesAfterPull(httpx.AsyncBaseTransport):
    """A transport that dies (once) as the answer to the pull request's create arrives."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.armed = True

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if self.armed and request.method == "POST" and request.url.path.endswith("/pulls"):
            self.armed = False
            raise Dies
        return response


def _run(
    store: Store,
    fake: FakeGitHubForge | FakeGitLabForge,
    *,
    via: Via = Via.GITHUB,
    at: datetime = NOW,
    labels: tuple[str, ...] = (),
    transport: httpx.AsyncBaseTransport | None = None,
) -> ProposeResult:
    settings = ProposeConfig(via=via, labels=labels)

    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5, transport=transport) as client:
            forge: GitHubForge | GitLabForge
            if isinstance(fake, FakeGitHubForge):
                forge = GitHubForge(fake.repository, client, api_url=fake.url, token=TOKEN)
            else:
                forge = GitLabForge(fake.project_path, client, api_url=fake.url, token=TOKEN)
            proposer = Proposer(
                store,
                pusher_for=lambda root, s: Pusher(root, remote=s.remote),
                forge_for=lambda _root, _s: forge,
                config_for=lambda _root: Config(propose=settings),
                now=lambda: at,
            )
            return await proposer.run()

    return asyncio.run(main())


def _person_pushes(bare: Path, tmp: Path, branch: str, text: str, *, start: str = "main") -> str:
    """A person commits ``text`` as the file on ``branch`` (from ``start``) and pushes it."""
    work = tmp / f"person-{branch.replace('/', '-')}"
    if not work.exists():
        subprocess.run(["git", "clone", "-q", str(bare), str(work)], check=True)
    _git("fetch", "-q", "origin", cwd=work)
    _git("checkout", "-q", "-B", branch, f"origin/{start}", cwd=work)
    (work / "requirements" / "kv.txt").write_text(text, encoding="utf-8")
    _git(*PERSON, "commit", "-qam", "by a person", cwd=work)
    _git("push", "-q", "-f", "origin", f"{branch}:{branch}", cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)


def _branch_name(store: Store) -> str:
    with store.session() as session:
        key = session.exec(select(StoredExclusion)).one().key
    return f"govern/relax/cupy-cuda13x-{key[:10]}"


# -- never overwrite other people's commits -------------------------------------------------


def test_a_reviewer_s_fix_up_survives_a_newer_candidate_and_a_comment_says_so(
    store: Store, origin: tuple[Path, Path], github: FakeGitHubForge, tmp_path: Path
) -> None:
    bare, _clone = origin
    first = _run(store, github).proposals[0]
    assert (first.state, first.branch) == ("sent", _branch_name(store))
    assert first.branch is not None
    assert first.number is not None
    # A reviewer adds a fix-up commit on govern's branch.
    fixed = _person_pushes(bare, tmp_path, first.branch, KV + "nixl\n", start=first.branch)
    verify(store, "14.1.2")
    results = [_run(store, github) for _ in range(2)]
    assert _git("rev-parse", first.branch, cwd=bare) == fixed, "the fix-up survives"
    assert [r.proposals[0].state for r in results] == ["left-alone"] * 2
    assert results[0].proposals[0].number == first.number
    said = [c["body"] for c in github.comments.get(first.number, [])]
    assert len(said) == 1, "one comment, however many runs"
    assert "14.1.2" in said[0]
    assert "govern did not make" in said[0]
    assert "<!-- govern:left-alone=" in said[0]
    assert github.pulls[first.number]["state"] == "open"
    assert "14.1.1" in github.pulls[first.number]["title"], "not updated over the fix-up"
    with store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        shown = proposals_of(session, exclusion_id=exclusion.id or 0)
    notes = [d.note for p in shown for d in p.deliveries if d.note]
    assert any("left alone" in n and first.branch in n for n in notes), notes


def test_a_branch_of_the_same_name_is_left_untouched_and_another_name_is_used(
    store: Store, origin: tuple[Path, Path], tmp_path: Path
) -> None:
    bare, _clone = origin
    name = _branch_name(store)
    theirs = _person_pushes(bare, tmp_path, name, KV + "other = 1\n")
    settings = ProposeConfig(via=Via.GIT)
    proposer = Proposer(
        store,
        pusher_for=lambda root, s: Pusher(root, remote=s.remote),
        config_for=lambda _root: Config(propose=settings),
        now=lambda: NOW,
    )
    results = [asyncio.run(proposer.run()) for _ in range(2)]
    outcome = results[0].proposals[0]
    assert (outcome.state, outcome.branch) == ("sent", f"{name}-2")
    assert results[1].proposals[0].branch == f"{name}-2"
    assert _git("rev-parse", name, cwd=bare) == theirs, "the taken branch is untouched"
    diff = _git("diff", f"main..{name}-2", cwd=bare)
    assert "+cupy-cuda13x != 14.1.0" in diff
    # A newer candidate goes to the branch govern used, not back to the taken one.
    verify(store, "14.1.2")
    newer = asyncio.run(proposer.run()).proposals[0]
    assert (newer.state, newer.branch) == ("sent", f"{name}-2")
    assert _git("rev-parse", name, cwd=bare) == theirs
    assert "14.1.2" in _git("log", "-1", "--format=%B", f"{name}-2", cwd=bare)


def test_gitlab_a_person_s_open_merge_request_on_the_branch_is_not_pushed_into(
    store: Store, origin: tuple[Path, Path]
) -> None:
    bare, _clone = origin
    with FakeGitLabForge(token=TOKEN) as gitlab:
        # The push goes out; the merge request's create fails (GitLab is down).
        down = gitlab_message(503, "503 Service Unavailable")
        gitlab.fail(down, method="POST", path="/merge_requests")
        first = _run(store, gitlab, via=Via.GITLAB).proposals[0]
        assert first.state == "failed"
        assert first.branch is not None
        pushed = _git("rev-parse", first.branch, cwd=bare)
        tried = len(gitlab.sent("POST", "/merge_requests"))
        # Meanwhile a person opens a merge request of their own from that branch.
        iid = gitlab.add_merge_request(first.branch, "taking this over")
        verify(store, "14.1.2")
        later = [_run(store, gitlab, via=Via.GITLAB, at=NOW + timedelta(days=d)) for d in (1, 2)]
        assert _git("rev-parse", first.branch, cwd=bare) == pushed, "not pushed into"
        assert [r.proposals[0].state for r in later] == ["left-alone"] * 2
        assert len(gitlab.sent("POST", "/merge_requests")) == tried, "no create, no 409 loop"
        assert list(gitlab.merge_requests) == [iid]
        notes = [n["body"] for n in gitlab.notes.get(("merge_requests", iid), [])]
        assert len(notes) == 1
        assert "<!-- govern:left-alone=" in notes[0]


# -- labels are a delivery of their own -----------------------------------------------------


def test_labels_are_applied_after_a_crash_right_after_the_pull_request_is_created(
    store: Store, origin: tuple[Path, Path], github: FakeGitHubForge
) -> None:
    with pytest.raises(Dies):
        _run(store, github, labels=("dependencies",), transport=DiesAfterPull())
    (number,) = github.pulls
    assert github.pulls[number]["labels"] == []
    again = _run(store, github, labels=("dependencies",)).proposals[0]
    assert (again.state, again.number) == ("sent", number)
    assert [label["name"] for label in github.pulls[number]["labels"]] == ["dependencies"]
    assert len(github.pulls) == 1


def test_labels_are_applied_after_a_failed_labels_call(
    store: Store, origin: tuple[Path, Path], github: FakeGitHubForge
) -> None:
    github.fail(message(502, "Bad Gateway"), method="POST", path="/labels", times=3)
    failed = _run(store, github, labels=("dependencies",)).proposals[0]
    assert failed.state == "failed"
    (number,) = github.pulls
    assert github.pulls[number]["labels"] == []
    again = _run(store, github, labels=("dependencies",), at=NOW + timedelta(days=1))
    assert (again.proposals[0].state, again.proposals[0].number) == ("sent", number)
    assert [label["name"] for label in github.pulls[number]["labels"]] == ["dependencies"]
    _run(store, github, labels=("dependencies",), at=NOW + timedelta(days=2))
    assert len(github.pulls[number]["labels"]) == 1, "applied once"


# -- a person's own change already admits the candidate -------------------------------------


def test_the_pull_request_is_closed_with_a_comment_when_the_base_already_admits_it(
    store: Store, origin: tuple[Path, Path], github: FakeGitHubForge, tmp_path: Path
) -> None:
    bare, _clone = origin
    opened = _run(store, github).proposals[0]
    assert opened.number is not None
    _person_pushes(bare, tmp_path, "main", KV.replace("< 14.1.0", "!= 14.1.0"))
    results = [_run(store, github) for _ in range(2)]
    assert [r.proposals[0].state for r in results] == ["unchanged"] * 2
    pull = github.pulls[opened.number]
    assert (pull["state"], pull["merged"]) == ("closed", False)
    said = [c["body"] for c in github.comments.get(opened.number, [])]
    assert len(said) == 1
    assert "main already admits 14.1.1" in said[0]


# -- standing aside for another run is no failure -------------------------------------------


def _claimed(store: Store, pid: int) -> None:
    """The change request's delivery held right now by a live process on this host."""
    with store.session(write=True) as session:
        key = session.exec(select(StoredExclusion)).one().key
        session.add(
            Outbox(
                dedupe_key=f"change:{key}:14.1.1",
                action=OutboxAction.OPEN_CHANGE,
                state=OutboxState.SENDING,
                attempts=1,
                next_attempt_at=datetime.now(UTC) + timedelta(hours=1),
                result={
                    "claimed": {
                        "host": socket.gethostname(),
                        "pid": pid,
                        "at": NOW.isoformat(),
                        "sending": True,
                    }
                },
                created_at=NOW,
            )
        )


@pytest.fixture
def configured(origin: tuple[Path, Path], github: FakeGitHubForge) -> Iterator[dict[str, str]]:
    """The clone's .govern.toml proposing through the fake; the environment with its token."""
    _bare, clone = origin
    (clone / ".govern.toml").write_text(
        f'[propose]\nvia = "github"\nforge = "{github.url}/{github.repository}"\n'
        f'api-url = "{github.url}"\ntoken-env = "GOVERN_TEST_FORGE_TOKEN"\n',
        encoding="utf-8",
    )
    saved = os.environ.get("GOVERN_TEST_FORGE_TOKEN")
    os.environ["GOVERN_TEST_FORGE_TOKEN"] = TOKEN
    try:
        yield {**os.environ}
    finally:
        if saved is None:
            os.environ.pop("GOVERN_TEST_FORGE_TOKEN", None)
        else:
            os.environ["GOVERN_TEST_FORGE_TOKEN"] = saved


def test_a_run_that_stands_aside_exits_0_and_says_so(
    store: Store, database_url: str, configured: dict[str, str], github: FakeGitHubForge
) -> None:
    _claimed(store, os.getpid())  # this test's process: alive, and not the command's
    command = [sys.executable, "-m", "govern", "propose", "--db", database_url]
    done = subprocess.run(
        command, env=configured, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("stood-aside"), done.stdout
    assert "another run is sending it" in done.stdout
    assert github.pulls == {}, "left to the other run"


def test_the_daemon_s_propose_job_that_stands_aside_is_ok(
    store: Store, configured: dict[str, str], github: FakeGitHubForge
) -> None:
    _claimed(store, os.getppid())  # a live process of this host that is not this one
    outcome = asyncio.run(ProposeJob(store)())
    assert outcome.ok, outcome.summary
    assert "stood-aside" in outcome.summary
    assert github.pulls == {}

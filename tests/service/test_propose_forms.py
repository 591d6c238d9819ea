"""Proposals on real git for the other shapes an exclusion takes: the cuDNN cap beside a
floor (vllm #42599 raised the floor and lost the reason; govern keeps it), a hash-checked
pin, a ``pyproject.toml`` dependency and optional dependency, and GitLab's merge requests.

Each test builds a repository with a bare ``origin``, tracks it, publishes the releases
(with their files, as the poll stores them), verifies the candidate with a CI run that
reports the installed version, and runs the proposer.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from gitrepo import Repo
from reminderworld import NOW, Passes
from sqlmodel import col, select

from fakes.forge_gitlab import FakeGitLabForge
from govern.config import Config, ProposeConfig
from govern.exclusions.states import EventKind, State, Via
from govern.forge.gitlab import GitLabForge
from govern.git.push import Pusher
from govern.service.propose import Proposer, ProposeResult
from govern.service.track import TrackOptions, track
from govern.service.verify import Verifier
from govern.store.db import Store
from govern.store.models import Candidate, Event, StoredExclusion, StoredRelease

KV = """\
lmcache >= 0.3.9
# cuDNN frontend 1.19.0 breaks the CUDA 13 runtime images (vllm-project/vllm#36719).
nvidia-cudnn-frontend>=1.13.0,<1.19.0
nixl >= 0.7.1 # Required for disaggregated prefill
"""
HASHED = """\
# demo-lib 2.1.0 segfaults on import (example/demo-lib#77): stay on 2.0.3 until a fix
# is verified on the runtime image.
demo-lib==2.0.3 \\
    --hash=sha256:{old}
other==1.0 \\
    --hash=sha256:{other}
"""
PYPROJECT = """\
[project]
name = "app"
version = "1"
dependencies = [
    # CuPy 14.1.0 imports pytest at import time (cupy/cupy#9963).
    "cupy-cuda13x<14.1.0",
    'numpy>=1.26',  # literal strings stay literal
]

[project.optional-dependencies]
kv = [
    "lmcache >= 0.3.9",
    # cuDNN frontend 1.19.0 breaks the CUDA 13 runtime images.
    "nvidia-cudnn-frontend>=1.13.0,<1.19.0",
]
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def _wheel(name: str, version: str, digest: str) -> dict[str, Any]:
    filename = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    return {
        "filename": filename,
        "url": f"https://files.example/{filename}",
        "requires_python": None,
        "yanked": False,
        "yanked_reason": None,
        "upload_time": None,
        "size": 1000,
        "hashes": {"sha256": digest},
    }


class World:
    """A tracked repository with a bare origin and a store."""

    def __init__(self, tmp_path: Path, store: Store, files: Mapping[str, str]) -> None:
        seed = Repo(tmp_path / "seed")
        for path, text in files.items():
            seed.write(path, text)
        seed.git("add", "-A")
        seed.git("commit", "-q", "-m", "requirements")
        self.bare = tmp_path / "origin.git"
        seed.git("clone", "-q", "--bare", str(seed.root), str(self.bare))
        self.clone = tmp_path / "app"
        subprocess.run(["git", "clone", "-q", str(self.bare), str(self.clone)], check=True)
        self.store = store
        track(
            store,
            self.clone,
            None,
            config=Config(repository="org/app"),
            options=TrackOptions(now=NOW),
        )

    def verify(
        self,
        package: str,
        versions: Sequence[str],
        verified: str,
        files: Mapping[str, list[dict[str, Any]]] | None = None,
    ) -> None:
        """Publish ``versions`` of ``package`` and verify ``verified`` for each of its
        exclusions."""
        with self.store.session(write=True) as session:
            releases = {
                v: StoredRelease(
                    package=package, version=v, first_seen_at=NOW, files=(files or {}).get(v, [])
                )
                for v in versions
            }
            session.add_all(releases.values())
            session.flush()
            for exclusion in session.exec(
                select(StoredExclusion).where(col(StoredExclusion.package) == package)
            ).all():
                session.add(
                    Candidate(
                        exclusion_id=exclusion.id or 0,
                        release_id=releases[verified].id or 0,
                        profile="cuda13",
                        found_at=NOW,
                    )
                )
                exclusion.state = State.CANDIDATE
        provider = Passes()
        verifier = Verifier(
            self.store,
            provider_for=lambda _profile: provider,
            providers={provider.name: provider},
            clock=lambda: NOW,
        )
        asyncio.run(verifier.run())

    def propose(self, settings: ProposeConfig | None = None, **options: Any) -> ProposeResult:
        proposer = Proposer(
            self.store,
            pusher_for=lambda root, s: Pusher(root, remote=s.remote),
            config_for=lambda _root: Config(propose=settings or ProposeConfig(via=Via.GIT)),
            now=lambda: NOW,
            **options,
        )
        return asyncio.run(proposer.run())

    def changed(self, branch: str) -> list[str]:
        """The lines the branch's one commit removes and adds."""
        assert len(_git("rev-list", f"main..{branch}", cwd=self.bare).split()) == 1
        diff = _git("diff", f"main..{branch}", cwd=self.bare)
        return [
            line
            for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    with Store(database_url) as opened:
        yield opened


def test_the_cudnn_cap_beside_a_floor_keeps_the_floor_and_its_reason(
    tmp_path: Path, store: Store
) -> None:
    world = World(tmp_path, store, {"requirements/kv_connectors.txt": KV})
    world.verify("nvidia-cudnn-frontend", ["1.13.0", "1.18.0", "1.19.0", "1.19.1"], "1.19.1")
    results = [world.propose() for _ in range(3)]
    (outcome,) = results[0].proposals
    assert (outcome.state, outcome.new) == ("sent", "nvidia-cudnn-frontend>=1.13.0,!=1.19.0")
    assert outcome.branch is not None
    assert world.changed(outcome.branch) == [
        "-nvidia-cudnn-frontend>=1.13.0,<1.19.0",
        "+# govern: verified='1.19.1 on cuda13: https://ci.example/runs/1.19.1, installed 1.19.1'",
        "+nvidia-cudnn-frontend>=1.13.0,!=1.19.0",
    ]
    text = _git("show", f"{outcome.branch}:requirements/kv_connectors.txt", cwd=world.bare)
    assert "# cuDNN frontend 1.19.0 breaks the CUDA 13 runtime images" in text
    assert [r.proposals[0].state for r in results[1:]] == ["sent", "sent"]


def test_a_hash_checked_pin_moves_to_the_candidate_with_every_hash_from_the_index(
    tmp_path: Path, store: Store
) -> None:
    old, other, new_a, new_b = ("a" * 64), ("b" * 64), ("c" * 64), ("d" * 64)
    world = World(tmp_path, store, {"requirements/hashed.txt": HASHED.format(old=old, other=other)})
    wheels = {
        "2.1.1": [
            _wheel("demo-lib", "2.1.1", new_b),
            {**_wheel("demo_lib-2.1.1-cp311", "2.1.1", new_a), "filename": "x.whl"},
        ]
    }
    world.verify("demo-lib", ["2.0.3", "2.1.0", "2.1.1"], "2.1.1", wheels)
    (outcome,) = world.propose().proposals
    assert (outcome.state, outcome.new) == ("sent", "demo-lib==2.1.1")
    assert outcome.branch is not None
    text = _git("show", f"{outcome.branch}:requirements/hashed.txt", cwd=world.bare)
    assert f"demo-lib==2.1.1 \\\n    --hash=sha256:{new_a} \\\n    --hash=sha256:{new_b}\n" in text
    assert f"other==1.0 \\\n    --hash=sha256:{other}\n" in text
    assert old not in text


def test_a_hash_checked_pin_without_every_hash_on_the_index_is_refused_with_the_reason(
    tmp_path: Path, store: Store
) -> None:
    world = World(
        tmp_path,
        store,
        {"requirements/hashed.txt": HASHED.format(old="a" * 64, other="b" * 64)},
    )
    no_hash = {**_wheel("demo-lib", "2.1.1", "c" * 64), "hashes": {}}
    world.verify("demo-lib", ["2.0.3", "2.1.0", "2.1.1"], "2.1.1", {"2.1.1": [no_hash]})
    (outcome,) = world.propose().proposals
    assert outcome.state == "failed"
    assert outcome.message is not None
    assert "--hash" in outcome.message
    branches = _git("for-each-ref", "--format=%(refname)", "refs/heads", cwd=world.bare)
    assert branches.split() == ["refs/heads/main"]


def test_a_pyproject_dependency_and_optional_dependency_keep_the_file_s_form(
    tmp_path: Path, store: Store
) -> None:
    world = World(tmp_path, store, {"pyproject.toml": PYPROJECT})
    world.verify("cupy-cuda13x", ["14.0.1", "14.1.0", "14.1.1"], "14.1.1")
    world.verify("nvidia-cudnn-frontend", ["1.13.0", "1.19.0", "1.19.1"], "1.19.1")
    result = world.propose()
    by_package = {p.ref.package: p for p in result.proposals}
    cupy, cudnn = by_package["cupy-cuda13x"], by_package["nvidia-cudnn-frontend"]
    assert (cupy.state, cupy.new) == ("sent", "cupy-cuda13x!=14.1.0")
    assert (cudnn.state, cudnn.new) == ("sent", "nvidia-cudnn-frontend>=1.13.0,!=1.19.0")
    assert cupy.branch is not None
    assert cudnn.branch is not None
    assert world.changed(cupy.branch) == [
        '-    "cupy-cuda13x<14.1.0",',
        "+    # govern: verified='"
        "14.1.1 on cuda13: https://ci.example/runs/14.1.1, installed 14.1.1'",
        '+    "cupy-cuda13x!=14.1.0",',
    ]
    assert world.changed(cudnn.branch) == [
        '-    "nvidia-cudnn-frontend>=1.13.0,<1.19.0",',
        "+    # govern: verified='"
        "1.19.1 on cuda13: https://ci.example/runs/1.19.1, installed 1.19.1'",
        '+    "nvidia-cudnn-frontend>=1.13.0,!=1.19.0",',
    ]


# -- GitLab: the merge request, once --------------------------------------------------------
# Against tests/fakes/forge_gitlab.py, which follows GitLab's REST documentation:
# https://docs.gitlab.com/ee/api/merge_requests.html (create, list by source_branch, update,
# notes) and https://docs.gitlab.com/ee/api/rest/index.html#pagination.

GITLAB_TOKEN = "glpat-" + "g" * 20


def _run_gitlab(world: World, fake: FakeGitLabForge) -> ProposeResult:
    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitLabForge(fake.project_path, client, api_url=fake.url, token=GITLAB_TOKEN)
            proposer = Proposer(
                world.store,
                pusher_for=lambda root, s: Pusher(root, remote=s.remote),
                forge_for=lambda _root, _s: forge,
                config_for=lambda _root: Config(propose=ProposeConfig(via=Via.GITLAB)),
                now=lambda: NOW,
            )
            return await proposer.run()

    return asyncio.run(main())


def test_the_merge_request_is_opened_once_then_updated_for_a_newer_candidate(
    tmp_path: Path, store: Store
) -> None:
    world = World(tmp_path, store, {"requirements/kv_connectors.txt": KV})
    world.verify("nvidia-cudnn-frontend", ["1.13.0", "1.19.0", "1.19.1"], "1.19.1")
    with FakeGitLabForge(token=GITLAB_TOKEN) as fake:
        first = [_run_gitlab(world, fake) for _ in range(3)]
        assert len(fake.merge_requests) == 1, "found by source branch and marker"
        (opened,) = first[0].proposals
        assert opened.state == "sent"
        (mr,) = fake.merge_requests.values()
        assert (opened.number, opened.url) == (mr["iid"], mr["web_url"])
        assert mr["source_branch"] == opened.branch
        assert "installed 1.19.1" in mr["description"]
        world.verify("nvidia-cudnn-frontend", ["1.19.2"], "1.19.2")
        (updated,) = _run_gitlab(world, fake).proposals
        assert len(fake.merge_requests) == 1
        assert updated.number == opened.number
        assert "installed 1.19.2" in mr["description"]
    with store.session() as session:
        kinds = [e.kind for e in session.exec(select(Event).order_by(col(Event.id))).all()]
    assert kinds.count(EventKind.PROPOSAL_OPENED) == 1
    assert kinds.count(EventKind.PROPOSAL_UPDATED) == 1


@pytest.mark.slow
def test_a_kill_9_between_the_merge_request_and_its_record_still_opens_one(
    tmp_path: Path, store: Store, database_url: str
) -> None:
    """A real ``govern propose`` process is killed (SIGKILL) by GitLab the moment the merge
    request exists; the next runs find it by its source branch and marker."""
    world = World(tmp_path, store, {"requirements/kv_connectors.txt": KV})
    world.verify("nvidia-cudnn-frontend", ["1.13.0", "1.19.0", "1.19.1"], "1.19.1")
    with FakeGitLabForge(token=GITLAB_TOKEN) as fake:
        (world.clone / ".govern.toml").write_text(
            f'[propose]\nvia = "gitlab"\nforge = "{fake.base}/{fake.project_path}"\n'
            f'api-url = "{fake.url}"\ntoken-env = "GOVERN_TEST_GITLAB_TOKEN"\n',
            encoding="utf-8",
        )
        env = {**os.environ, "GOVERN_TEST_GITLAB_TOKEN": GITLAB_TOKEN}
        command = [sys.executable, "-m", "govern", "propose", "--db", database_url]
        started: list[subprocess.Popen[str]] = []

        def kill_the_proposer(kind: str, _document: dict[str, Any]) -> None:
            if kind == "merge_request":
                os.kill(started[0].pid, signal.SIGKILL)
                started[0].wait(timeout=30)

        fake.on_create = kill_the_proposer
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        started.append(process)
        process.communicate(timeout=120)
        assert process.returncode == -signal.SIGKILL
        assert len(fake.merge_requests) == 1
        fake.on_create = None
        for _ in range(3):
            done = subprocess.run(
                command, env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert done.returncode == 0, done.stderr
            assert GITLAB_TOKEN not in done.stdout + done.stderr
        assert len(fake.merge_requests) == 1, "found by source branch and marker"
        assert fake.created == ["merge_request"]
    with store.session() as session:
        opened = session.exec(
            select(Event).where(col(Event.kind) == EventKind.PROPOSAL_OPENED)
        ).all()
    (mr,) = fake.merge_requests.values()
    assert [e.pull_request for e in opened] == [mr["iid"]]

"""A store for the dashboard's tests and bench/serve.py: the CuPy story plus generated debt.

The CuPy exclusion goes through the real tracker (``govern track`` on a requirements file
with the cap's own comment); its releases, candidates and verification are what the watcher
and ``govern verify`` would have written (14.1.0 published and capped, 14.1.1 a candidate
that passed on the runtime profile with 14.1.1 installed), and so are the candidates'
stored relaxations. The generated exclusions are
written in bulk: packages ``pkg-00001`` ..., every kind and state, ages from days to years,
owners, review dates (some overdue), some candidates, and reasons that contain HTML.
"""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert
from sqlmodel import col, select

from govern.config import Config
from govern.exclusions.model import SubKind
from govern.exclusions.states import CandidateStatus, Conclusion, EventKind, State
from govern.service.track import TrackOptions, track
from govern.store import relaxations
from govern.store.db import BULK, Store
from govern.store.models import (
    Candidate,
    Event,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
    StoredSource,
    Verification,
)

NOW = datetime(2026, 8, 12, 12, 0, tzinfo=UTC)
CUPY = (
    "# CuPy 14.1.0 imports pytest from cupy.testing._random at import time, which breaks\n"
    "# the runtime images. Use <14.1.0 until a fixed newer release is verified for runtime\n"
    "# images. https://github.com/vllm-project/vllm/issues/43512\n"
    "# govern: owner=@runtime-team review-by=2026-11-30\n"
    "cupy-cuda13x < 14.1.0\n"
)
HOSTILE = "<script>alert('owned')</script> & <b>bold</b>"
RUN_URL = "https://github.com/vllm-project/vllm/actions/runs/9000001"


def seed(store: Store, root: Path, *, generated: int = 200, now: datetime = NOW) -> str:
    """Fill the store; returns the CuPy exclusion's id."""
    repo = root / "vllm"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "requirements").mkdir(exist_ok=True)
    (repo / "requirements" / "cuda.txt").write_text(CUPY, encoding="utf-8")
    config = Config(repository="github.com/vllm-project/vllm")
    opened = now - timedelta(days=80)
    track(store, repo, None, config=config, options=TrackOptions(now=opened))
    with store.session(write=True) as session:
        cupy = session.exec(
            select(StoredExclusion).where(StoredExclusion.package == "cupy-cuda13x")
        ).one()
        assert cupy.id is not None
        bad = StoredRelease(package="cupy-cuda13x", version="14.1.0", first_seen_at=opened)
        fixed = StoredRelease(
            package="cupy-cuda13x", version="14.1.1", first_seen_at=now - timedelta(days=70)
        )
        session.add_all([bad, fixed])
        session.flush()
        candidate = Candidate(
            exclusion_id=cupy.id,
            release_id=fixed.id or 0,
            profile="cuda13",
            status=CandidateStatus.PASSED,
            found_at=now - timedelta(days=70),
        )
        session.add(candidate)
        session.flush()
        session.add(
            Verification(
                candidate_id=candidate.id or 0,
                provider="gpu",
                profile="cuda13",
                run_id="9000001",
                run_url=RUN_URL,
                started_at=now - timedelta(days=69, hours=1),
                finished_at=now - timedelta(days=69),
                conclusion=Conclusion.PASSED,
                installed_version="14.1.1",
                detail="exit status 0",
                log_excerpt="govern-verify: installed cupy-cuda13x==14.1.1\n12 passed in 3.1s\n",
            )
        )
        for kind, days, detail in (
            (
                EventKind.CANDIDATE_FOUND,
                70,
                {"version": "14.1.1", "profile": "cuda13", "role": "newest"},
            ),
            (
                EventKind.VERIFICATION_STARTED,
                69,
                {
                    "version": "14.1.1",
                    "profile": "cuda13",
                    "provider": "gpu",
                    "attempt": 1,
                    "run_url": RUN_URL,
                },
            ),
            (
                EventKind.VERIFICATION_PASSED,
                69,
                {
                    "version": "14.1.1",
                    "profile": "cuda13",
                    "provider": "gpu",
                    "attempt": 1,
                    "installed": "14.1.1",
                    "run_url": RUN_URL,
                    "conclusion": "passed",
                },
            ),
        ):
            at = now - timedelta(days=days)
            session.add(
                Event(exclusion_id=cupy.id, kind=kind, at=at, recorded_at=at, detail=detail)
            )
        cupy.state = State.VERIFIED
        key = cupy.key
    if generated:
        generate(store, generated, now=now)
    with store.session(write=True) as session:
        relaxations.fill_missing(session)
    return key


def generate(store: Store, count: int, *, now: datetime = NOW, seed_value: int = 7) -> None:
    """``count`` exclusions in bulk, over a few repositories and files."""
    rng = random.Random(seed_value)  # noqa: S311 -- test data, not cryptography
    # (kind, operator, sub-kind): exact for all three (a sub-kind is a SubKind).
    kinds = [(k, op, SubKind.EXACT) for k, op in (("cap", "<"), ("not-equal", "!="), ("pin", "=="))]
    states = ["held"] * 6 + ["candidate"] * 2 + ["verified", "verifying"]
    with store.session(write=True) as session:
        repositories = []
        for number in range(max(1, min(20, count // 500 + 2))):
            repository = Repository(
                name=f"github.com/example/app-{number}", root=f"/srv/app-{number}", created_at=now
            )
            session.add(repository)
            repositories.append(repository)
        session.flush()
        sources = []
        for repository in repositories:
            for name in ("requirements.txt", "requirements/test.txt", "pyproject.toml"):
                source = StoredSource(
                    repository_id=repository.id or 0,
                    path=name,
                    format="pyproject" if name.endswith(".toml") else "requirements",
                    first_seen_at=now,
                    last_seen_at=now,
                )
                session.add(source)
                sources.append(source)
        session.flush()
        rows: list[dict[str, Any]] = []
        for index in range(count):
            kind, operator, sub = kinds[index % len(kinds)]
            major = rng.randint(1, 30)
            version = f"{major}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"
            source = sources[index % len(sources)]
            package = f"pkg-{index:05d}"
            rows.append(
                {
                    "key": f"gen{index:07d}",
                    "repository_id": source.repository_id,
                    "source_id": source.id,
                    "package": package,
                    "marker": None,
                    "group": None,
                    "clause": f"{operator}{version}",
                    "kind": kind,
                    "sub_kind": sub,
                    "requirement": f"{package}{operator}{version}",
                    "line": index + 1,
                    "state": states[index % len(states)],
                    "predecessor_id": None,
                    "first_seen_at": now
                    - timedelta(days=rng.randint(1, 1100), hours=rng.randint(0, 23)),
                    "removed_at": None,
                    "introduced_commit": None,
                    "introduced_pull_request": None,
                    "snoozed_until": None,
                    "assigned_owner": None,
                    "acknowledged_at": None,
                }
            )
        session.execute(insert(StoredExclusion), rows, execution_options=BULK)
        ids = {
            key: row_id
            for row_id, key in session.execute(
                select(StoredExclusion.id, StoredExclusion.key).where(
                    col(StoredExclusion.key).like("gen%")
                )
            )
        }
        notes: list[dict[str, Any]] = []
        for index, row in enumerate(rows):
            reason = HOSTILE if index % 50 == 3 else f"broken build of {row['package']} (#{index})"
            overdue = index % 9 == 0
            notes.append(
                {
                    "exclusion_id": ids[row["key"]],
                    "current": True,
                    "fingerprint": f"{index:064d}"[:64],
                    "reason": reason if index % 4 else None,
                    "links": [f"https://github.com/example/app/issues/{index}"]
                    if index % 3 == 0
                    else [],
                    "bad_versions": [],
                    "owner": f"@team-{index % 7}" if index % 2 == 0 else None,
                    "review_by": (now - timedelta(days=10)).date()
                    if overdue
                    else date(2027, 6, 30),
                    "verify": None,
                    "profiles": [],
                    "recorded_at": now,
                    "commit": None,
                }
            )
        session.execute(insert(StoredAnnotation), notes, execution_options=BULK)
        releases: list[dict[str, Any]] = []
        for row in rows:
            if row["state"] in ("candidate", "verified", "verifying"):
                releases.append(
                    {
                        "package": row["package"],
                        "version": "99.0.0",
                        "uploaded_at": None,
                        "yanked": False,
                        "yanked_reason": None,
                        "requires_python": None,
                        "files": [],
                        "first_seen_at": now,
                    }
                )
        if releases:
            session.execute(insert(StoredRelease), releases, execution_options=BULK)
            release_ids = {
                package: row_id
                for row_id, package in session.execute(
                    select(StoredRelease.id, StoredRelease.package).where(
                        StoredRelease.version == "99.0.0"
                    )
                )
            }
            candidates = [
                {
                    "exclusion_id": ids[row["key"]],
                    "release_id": release_ids[row["package"]],
                    "profile": "default",
                    "role": "newest",
                    "eligible": True,
                    "reason": None,
                    "status": {"verified": "passed", "verifying": "verifying"}.get(
                        row["state"], "found"
                    ),
                    "found_at": now,
                }
                for row in rows
                if row["package"] in release_ids
            ]
            session.execute(insert(Candidate), candidates, execution_options=BULK)

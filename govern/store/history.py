"""What happened to exclusions: governance threads (``govern history``), and one exclusion's
page (its thread's events, candidates with their verifications, proposals)."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from typing import Any

from packaging.utils import canonicalize_name
from sqlalchemy import Text, cast, or_, select

from govern.store.core import Reader, record, records
from govern.store.location import as_utc
from govern.store.queries import (
    exclusion_public,
    find_row,
    has_nul,
    like_literal,
    newest_first,
    ordered_rows,
)
from govern.store.schema import (
    annotation,
    candidate,
    event,
    exclusion,
    lock_pin,
    proposal,
    release,
    repository,
    source,
)
from govern.store.schema import verification as run
from govern.store.views import (
    CandidatePublic,
    EventPublic,
    ExclusionDetail,
    ExclusionPublic,
    LockHeldPublic,
    ProposalPublic,
    ThreadPublic,
    VerificationPublic,
)

_BATCH = 500


def lock_history(
    session: Reader,
    *,
    package: str,
    repository_name: str | None = None,
) -> list[LockHeldPublic]:
    """What the tracked locks held of ``package`` over time (``govern track --history``),
    oldest first; only one repository's locks when given."""
    statement = (
        select(
            repository.c.name,
            source.c.path,
            lock_pin.c.package,
            lock_pin.c.version,
            lock_pin.c.since,
            lock_pin.c.since_commit,
            lock_pin.c.until,
            lock_pin.c.until_commit,
        )
        .select_from(lock_pin)
        .join(source, source.c.id == lock_pin.c.source_id)
        .join(repository, repository.c.id == source.c.repository_id)
        .where(lock_pin.c.package == canonicalize_name(package))
        .order_by(lock_pin.c.since, repository.c.name, source.c.path, lock_pin.c.id)
    )
    if repository_name is not None:
        statement = statement.where(repository.c.name == repository_name)
    return [
        LockHeldPublic(
            repository=name,
            path=path,
            package=pkg,
            version=version,
            since=as_utc(since),
            since_commit=since_commit,
            until=as_utc(until) if until is not None else None,
            until_commit=until_commit,
        )
        for name, path, pkg, version, since, since_commit, until, until_commit in session.execute(
            statement
        )
    ]


def threads(session: Reader, *, query: str, now: datetime) -> list[ThreadPublic]:
    """The governance threads of a package (by name) or of one exclusion (by id).

    A thread is a clause with its predecessors and successors (``< 14.1.0`` that became
    ``!= 14.1.0``), joined with every exclusion that shares a linked issue or pull
    request with it (a cap on the same bug in another file, the same package's thread
    in another repository).
    """
    if has_nul(query):
        return []
    name = canonicalize_name(query)
    seed_query = select(exclusion.c.id).where(
        or_(exclusion.c.key == query, exclusion.c.package == name)
    )
    seeds = [row_id for (row_id,) in session.execute(seed_query)]
    if not seeds:
        return []
    component = _components(session, seeds)
    rows = {}
    members_ids = list(component)
    for start in range(0, len(members_ids), _BATCH):
        batch = members_ids[start : start + _BATCH]
        for row in ordered_rows(session, exclusion.c.id.in_(batch)):
            assert row[0].id is not None
            rows[row[0].id] = row
    notes = _all_notes(session, list(rows))
    groups: dict[int, list[int]] = defaultdict(list)
    for row_id in rows:
        groups[component[row_id]].append(row_id)
    shown = {
        row_id: exclusion_public(row, now=now, assigned_owner=False) for row_id, row in rows.items()
    }
    events = _events(session, list(shown))
    out: list[ThreadPublic] = []
    for members in groups.values():
        ordered = sorted(members, key=lambda m: (shown[m].first_seen, m))
        timeline = sorted(
            (
                (as_utc(step.at), m, _timeline(step, shown[m], notes.get(m, [])))
                for m in members
                for step in events.get(m, [])
            ),
            key=lambda entry: (entry[0], entry[1]),
        )
        linked = sorted({link for m in members for n in notes.get(m, []) for link in n.links})
        out.append(
            ThreadPublic(
                exclusions=[shown[m] for m in ordered],
                links=linked,
                events=[step for _, _, step in timeline],
            )
        )
    out.sort(key=lambda t: (t.exclusions[0].package != name, t.exclusions[0].first_seen))
    return out


def _components(session: Reader, seeds: list[int]) -> dict[int, int]:
    """Each exclusion reached from the seeds, with the seed whose thread it is in.

    The graph is walked level by level in SQL (predecessor edges both ways, and exclusions
    whose annotations share a link), so a thread costs a few queries however large the
    store is.
    """
    component: dict[int, int] = {}
    for seed in seeds:
        if seed in component:
            continue
        component[seed] = seed
        frontier = {seed}
        seen_links: set[str] = set()
        while frontier:
            reached = _predecessor_neighbours(session, frontier)
            links = _links_of(session, frontier) - seen_links
            seen_links |= links
            reached |= _sharing(session, links)
            frontier = reached - component.keys()
            for other in frontier:
                component[other] = seed
    return component


def _batches(ids: set[int]) -> list[list[int]]:
    ordered = sorted(ids)
    return [ordered[i : i + _BATCH] for i in range(0, len(ordered), _BATCH)]


def _predecessor_neighbours(session: Reader, ids: set[int]) -> set[int]:
    """Exclusions one predecessor edge away (either direction) from any of ``ids``."""
    out: set[int] = set()
    for batch in _batches(ids):
        for row_id, predecessor in session.execute(
            select(exclusion.c.id, exclusion.c.predecessor_id).where(
                or_(
                    exclusion.c.id.in_(batch),
                    exclusion.c.predecessor_id.in_(batch),
                )
            )
        ):
            out.add(row_id)
            if predecessor is not None:
                out.add(predecessor)
    return out


def _links_of(session: Reader, ids: set[int]) -> set[str]:
    """Every link in any annotation version of ``ids``."""
    out: set[str] = set()
    for batch in _batches(ids):
        for (links,) in session.execute(
            select(annotation.c.links).where(annotation.c.exclusion_id.in_(batch))
        ):
            out.update(link for link in links or () if isinstance(link, str))
    return out


def _sharing(session: Reader, links: set[str]) -> set[int]:
    """Exclusions with an annotation version that lists any of ``links``.

    The JSON column is matched as text first (``LIKE '%"<link>"%'``, which an index cannot
    serve but the database scans without decoding a row), then checked exactly.
    """
    out: set[int] = set()
    for link in sorted(links):
        pattern = f"%{like_literal(json.dumps(link))}%"
        for exclusion_id, found in session.execute(
            select(annotation.c.exclusion_id, annotation.c.links).where(
                cast(annotation.c.links, Text).like(pattern, escape="\\")
            )
        ):
            if link in (found or ()):
                out.add(exclusion_id)
    return out


def _all_notes(session: Reader, ids: list[int]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    statement = (
        select(annotation).where(annotation.c.exclusion_id.in_(ids)).order_by(annotation.c.id)
    )
    for row in session.execute(statement):
        note = record(row, annotation)
        out[note.exclusion_id].append(note)
    return out


def _events(session: Reader, ids: list[int]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = defaultdict(list)
    statement = select(event).where(event.c.exclusion_id.in_(ids)).order_by(event.c.id)
    for row in session.execute(statement):
        step = record(row, event)
        out[step.exclusion_id].append(step)
    return out


def _timeline(step: Any, shown: ExclusionPublic, notes: list[Any]) -> EventPublic:
    at = as_utc(step.at)
    # The annotation in force right after the event: the newest recorded at or before it.
    note = None
    for version in notes:
        if as_utc(version.recorded_at) <= at:
            note = version
    if note is None and notes:
        note = notes[0]
    return EventPublic(
        at=at,
        kind=step.kind,
        exclusion=shown.id,
        source=shown.source,
        package=shown.package,
        clause=shown.clause,
        commit=step.commit,
        pull_request=step.pull_request,
        author=step.author,
        detail=dict(step.detail),
        reason=note.reason if note else None,
        links=list(note.links) if note else [],
    )


# -- one exclusion ----------------------------------------------------------------------------


def detail(session: Reader, *, key: str, now: datetime) -> ExclusionDetail | None:
    """The exclusion with this id, its thread, candidates and proposals; None if unknown."""
    row = find_row(session, key=key)
    if row is None or row[0].id is None:
        return None
    found = threads(session, query=key, now=now)
    events = sorted((e for t in found for e in t.events), key=lambda e: e.at)
    return ExclusionDetail(
        exclusion=exclusion_public(row, now=now),
        thread=events,
        candidates=candidates_of(session, exclusion_id=row[0].id),
        proposals=proposals_of(session, exclusion_id=row[0].id),
    )


def candidates_of(session: Reader, *, exclusion_id: int) -> list[CandidatePublic]:
    """Every release considered for an exclusion, newest first, with its verifications."""
    runs: dict[int, list[VerificationPublic]] = defaultdict(list)
    rows = [
        records(row, candidate, release)
        for row in session.execute(
            select(candidate, release)
            .join(release, release.c.id == candidate.c.release_id)
            .where(candidate.c.exclusion_id == exclusion_id)
        )
    ]
    ids = [c.id for c, _ in rows]
    if ids:
        for found in session.execute(
            select(run).where(run.c.candidate_id.in_(ids)).order_by(run.c.id)
        ):
            v = record(found, run)
            runs[v.candidate_id].append(
                VerificationPublic(
                    provider=v.provider,
                    kind=v.kind,
                    version=v.version,
                    attempt=v.attempt,
                    conclusion=v.conclusion,
                    installed=v.installed_version,
                    run_url=v.run_url,
                    started=as_utc(v.started_at),
                    finished=as_utc(v.finished_at) if v.finished_at else None,
                    detail=v.detail,
                    log=v.log_excerpt,
                )
            )
    shown = [
        CandidatePublic(
            version=seen.version,
            profile=considered.profile,
            role=considered.role,
            eligible=considered.eligible,
            reason=considered.reason,
            status=considered.status,
            found=as_utc(considered.found_at),
            verifications=runs.get(considered.id, []),
        )
        for considered, seen in rows
    ]
    shown.sort(key=lambda c: (newest_first(c.version), c.profile))
    return shown


def proposals_of(session: Reader, *, exclusion_id: int) -> list[ProposalPublic]:
    """The proposals made for an exclusion, each with its outbox rows (oldest first)."""
    from govern.store import outbox  # the page's, not govern history's

    rows = [
        record(row, proposal)
        for row in session.execute(
            select(proposal).where(proposal.c.exclusion_id == exclusion_id).order_by(proposal.c.id)
        )
    ]
    sent = outbox.deliveries_of(session, proposal_ids=[p.id for p in rows])
    return [
        ProposalPublic(
            kind=p.kind,
            state=p.state,
            new_clause=p.new_clause,
            url=p.url,
            created=as_utc(p.created_at),
            version=p.version,
            number=p.number,
            branch=p.branch,
            via=p.via,
            deliveries=sent.get(p.id, []),
        )
        for p in rows
    ]
